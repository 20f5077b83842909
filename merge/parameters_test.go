package merge

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// decodeAny decodes any JSON value with UseNumber, failing the test on error.
func decodeAny(t testing.TB, s string) any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %q: %v", s, err)
	}
	return v
}

// canonical re-encodes an object the way Parameters does, so expectations can
// be written in any key order and spacing.
func canonical(t testing.TB, s string) string {
	t.Helper()
	obj, err := Decode("test", []byte(s))
	if err != nil {
		t.Fatalf("decoding %q: %v", s, err)
	}
	out, err := encode(obj)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestParameters(t *testing.T) {
	tests := []struct {
		name       string
		class, set string
		want       string // canonical form: sorted keys, compact
	}{
		{"both empty", ``, ``, `{}`},
		{"empty class", ``, `{"a":1}`, `{"a":1}`},
		{"empty set", `{"a":1}`, ``, `{"a":1}`},
		{"whitespace only", " \n\t", "\r\n", `{}`},
		{"empty objects", `{}`, `{}`, `{}`},
		{
			name:  "nested merge",
			class: `{"serial":{"baud":115200,"port":"/dev/ttyUSB0"},"power":{"kind":"relay"}}`,
			set:   `{"serial":{"baud":9600,"parity":"even"}}`,
			want:  `{"power":{"kind":"relay"},"serial":{"baud":9600,"parity":"even","port":"/dev/ttyUSB0"}}`,
		},
		{
			name:  "deeply nested merge",
			class: `{"a":{"b":{"c":{"d":1,"e":2}}}}`,
			set:   `{"a":{"b":{"c":{"e":3,"f":4}}}}`,
			want:  `{"a":{"b":{"c":{"d":1,"e":3,"f":4}}}}`,
		},
		{
			name:  "list replaces list",
			class: `{"args":["--a","--b"],"keep":[1]}`,
			set:   `{"args":["--c"]}`,
			want:  `{"args":["--c"],"keep":[1]}`,
		},
		{
			name:  "empty list replaces list",
			class: `{"args":["--a"]}`,
			set:   `{"args":[]}`,
			want:  `{"args":[]}`,
		},
		{
			name:  "list of objects is not merged element-wise",
			class: `{"l":[{"a":1,"b":2}]}`,
			set:   `{"l":[{"a":3}]}`,
			want:  `{"l":[{"a":3}]}`,
		},
		{
			name:  "scalar replace",
			class: `{"s":"x","n":1,"b":true}`,
			set:   `{"s":"y","n":2.5,"b":false}`,
			want:  `{"b":false,"n":2.5,"s":"y"}`,
		},
		{
			name:  "scalar type change",
			class: `{"v":"text"}`,
			set:   `{"v":42}`,
			want:  `{"v":42}`,
		},
		{
			name:  "object replaced by scalar",
			class: `{"o":{"a":1}}`,
			set:   `{"o":"flat"}`,
			want:  `{"o":"flat"}`,
		},
		{
			name:  "object replaced by list",
			class: `{"o":{"a":1}}`,
			set:   `{"o":[1,2]}`,
			want:  `{"o":[1,2]}`,
		},
		{
			name:  "scalar replaced by object",
			class: `{"o":"flat"}`,
			set:   `{"o":{"a":1}}`,
			want:  `{"o":{"a":1}}`,
		},
		{
			name:  "list replaced by object drops nulls inside",
			class: `{"o":[1]}`,
			set:   `{"o":{"a":1,"b":null}}`,
			want:  `{"o":{"a":1}}`,
		},
		{
			name:  "null deletes top-level key",
			class: `{"a":1,"b":2}`,
			set:   `{"a":null}`,
			want:  `{"b":2}`,
		},
		{
			name:  "null deletes nested key",
			class: `{"o":{"a":1,"b":2}}`,
			set:   `{"o":{"a":null}}`,
			want:  `{"o":{"b":2}}`,
		},
		{
			name:  "null deletes whole object",
			class: `{"o":{"a":1},"k":1}`,
			set:   `{"o":null}`,
			want:  `{"k":1}`,
		},
		{
			name:  "null on missing key is a no-op",
			class: `{"a":1}`,
			set:   `{"missing":null}`,
			want:  `{"a":1}`,
		},
		{
			name:  "null nested in object missing from class",
			class: `{"a":1}`,
			set:   `{"o":{"x":null,"y":2}}`,
			want:  `{"a":1,"o":{"y":2}}`,
		},
		{
			name:  "null nested in object that replaces a scalar",
			class: `{"o":5}`,
			set:   `{"o":{"x":null}}`,
			want:  `{"o":{}}`,
		},
		{
			name:  "null inside a list is kept",
			class: `{}`,
			set:   `{"l":[null,1]}`,
			want:  `{"l":[null,1]}`,
		},
		{
			name:  "null in class is an ordinary value",
			class: `{"a":null}`,
			set:   `{"b":1}`,
			want:  `{"a":null,"b":1}`,
		},
		{
			name:  "emptying a nested object keeps it",
			class: `{"o":{"a":1}}`,
			set:   `{"o":{"a":null}}`,
			want:  `{"o":{}}`,
		},
		{
			name:  "no HTML escaping, unicode kept",
			class: `{"s":"<a&b>"}`,
			set:   `{"u":"é\u00e9"}`,
			want:  `{"s":"<a&b>","u":"éé"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parameters([]byte(tt.class), []byte(tt.set))
			if err != nil {
				t.Fatalf("Parameters: %v", err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("Parameters(%s, %s) mismatch (-want +got):\n%s", tt.class, tt.set, diff)
			}
		})
	}
}

func TestParametersNilInputs(t *testing.T) {
	for _, tt := range []struct {
		name       string
		class, set []byte
		want       string
	}{
		{"nil nil", nil, nil, `{}`},
		{"nil class", nil, []byte(`{"a":1}`), `{"a":1}`},
		{"nil set", []byte(`{"a":1}`), nil, `{"a":1}`},
		{"empty slices", []byte{}, []byte{}, `{}`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parameters(tt.class, tt.set)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// Numbers must come out exactly as written: any float64 round trip would
// change 9007199254740993, overflow 1e400, and rewrite 0.10 and -0.
func TestParametersExactNumbers(t *testing.T) {
	class := `{"big":9007199254740993,"huge":1e400,"negzero":-0,"dec":0.10,"exp":1E+2,` +
		`"nested":{"n":123456789012345678901234567890,"tiny":1e-400},"list":[0.1,-0.0,18446744073709551617]}`
	set := `{"over":-9223372036854775809,"nested":{"f":0.30000000000000004}}`
	want := `{"big":9007199254740993,"dec":0.10,"exp":1E+2,"huge":1e400,` +
		`"list":[0.1,-0.0,18446744073709551617],"negzero":-0,` +
		`"nested":{"f":0.30000000000000004,"n":123456789012345678901234567890,"tiny":1e-400},` +
		`"over":-9223372036854775809}`
	got, err := Parameters([]byte(class), []byte(set))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestParametersErrors(t *testing.T) {
	tests := []struct {
		name       string
		class, set string
		wantSide   string
		notObject  bool   // error must wrap ErrNotObject
		wantSubstr string // full message must contain this
	}{
		{"class invalid", `{"a":`, `{}`, SideClass, false, "class parameters: invalid JSON"},
		{"set invalid", `{}`, `{"a" 1}`, SideExporterSet, false, "exporterset parameters: invalid JSON"},
		{"class garbage", `nope`, `{}`, SideClass, false, "class parameters: invalid JSON"},
		{"set trailing object", `{}`, `{} {}`, SideExporterSet, false, "unexpected data after top-level value"},
		{"class trailing garbage", `{}x`, `{}`, SideClass, false, "unexpected data after top-level value"},
		{"set trailing comma", `{}`, `{},`, SideExporterSet, false, "exporterset parameters: invalid JSON"},
		{"set array", `{}`, `[1,2]`, SideExporterSet, true, "exporterset parameters: top level must be a JSON object, got array"},
		{"class string", `"x"`, `{}`, SideClass, true, "class parameters: top level must be a JSON object, got string"},
		{"class number", `12`, `{}`, SideClass, true, "got number"},
		{"set boolean", `{}`, `true`, SideExporterSet, true, "got boolean"},
		{"set null", `{}`, `null`, SideExporterSet, true, "exporterset parameters: top level must be a JSON object, got null"},
		{"both bad reports class", `[`, `[`, SideClass, false, "class parameters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parameters([]byte(tt.class), []byte(tt.set))
			if err == nil {
				t.Fatalf("Parameters(%q, %q) = %s, want error", tt.class, tt.set, got)
			}
			if got != nil {
				t.Errorf("result on error = %q, want nil", got)
			}
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v (%T) is not an *InputError", err, err)
			}
			if ie.Side != tt.wantSide {
				t.Errorf("Side = %q, want %q", ie.Side, tt.wantSide)
			}
			if errors.Is(err, ErrNotObject) != tt.notObject {
				t.Errorf("errors.Is(err, ErrNotObject) = %v, want %v", !tt.notObject, tt.notObject)
			}
			if !strings.Contains(err.Error(), tt.wantSubstr) {
				t.Errorf("error %q does not contain %q", err, tt.wantSubstr)
			}
		})
	}
}

func TestDecodeSyntaxErrorUnwraps(t *testing.T) {
	_, err := Decode(SideClass, []byte(`{"a":x}`))
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		t.Fatalf("error %v does not unwrap to *json.SyntaxError", err)
	}
}

// TestRFC7386AppendixA runs the examples of RFC 7386 Appendix A verbatim.
// mergePatch accepts any JSON values, as the RFC does; Parameters only
// accepts objects, so the rows with a non-object side must fail there.
func TestRFC7386AppendixA(t *testing.T) {
	tests := []struct {
		original, patch, result string
	}{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a": {"b": "c"}}`, `{"a": {"b": "d", "c": null}}`, `{"a": {"b": "d"}}`},
		{`{"a": [{"b":"c"}]}`, `{"a": [1]}`, `{"a": [1]}`},
		{`["a","b"]`, `["c","d"]`, `["c","d"]`},
		{`{"a":"b"}`, `["c"]`, `["c"]`},
		{`{"a":"foo"}`, `null`, `null`},
		{`{"a":"foo"}`, `"bar"`, `"bar"`},
		{`{"e":null}`, `{"a":1}`, `{"e":null,"a":1}`},
		{`[1,2]`, `{"a":"b","c":null}`, `{"a":"b"}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.original+"+"+tt.patch, func(t *testing.T) {
			got := mergePatch(decodeAny(t, tt.original), decodeAny(t, tt.patch))
			if diff := cmp.Diff(decodeAny(t, tt.result), got); diff != "" {
				t.Errorf("mergePatch mismatch (-want +got):\n%s", diff)
			}

			_, origIsObj := decodeAny(t, tt.original).(map[string]any)
			_, patchIsObj := decodeAny(t, tt.patch).(map[string]any)
			out, err := Parameters([]byte(tt.original), []byte(tt.patch))
			switch {
			case !origIsObj || !patchIsObj:
				want := SideClass
				if origIsObj {
					want = SideExporterSet
				}
				var ie *InputError
				if !errors.As(err, &ie) || ie.Side != want || !errors.Is(err, ErrNotObject) {
					t.Errorf("Parameters error = %v, want non-object error for %s", err, want)
				}
			case err != nil:
				t.Errorf("Parameters: %v", err)
			default:
				if diff := cmp.Diff(canonical(t, tt.result), string(out)); diff != "" {
					t.Errorf("Parameters mismatch (-want +got):\n%s", diff)
				}
			}
		})
	}
}
