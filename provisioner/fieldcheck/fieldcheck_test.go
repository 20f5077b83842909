package fieldcheck

import (
	"encoding/json"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestSuggest(t *testing.T) {
	candidates := []string{"arch", "firmware", "machineType", "resources", "storage"}
	for in, want := range map[string]string{
		"resourses": "resources", "arhc": "arch", "MACHINETYPE": "machineType", "firmwre": "firmware",
		"stroage": "storage", "ach": "arch", "xyz": "", "resourcesXYZ": "", "": "",
	} {
		if got := Suggest(in, candidates); got != want {
			t.Errorf("Suggest(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEditDistance(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"abc", "abc", 0}, {"abc", "acb", 1}, {"abc", "ab", 1}, {"kitten", "sitting", 3},
		{strings.Repeat("a", 65), "a", 1 << 30},
	} {
		if got := EditDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("EditDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestDecodeObject(t *testing.T) {
	path := field.NewPath("parameters")
	for _, tc := range []struct {
		raw, wantErr string
		keys         int
	}{
		{raw: "", keys: 0},
		{raw: " null ", keys: 0},
		{raw: `{"a": 9007199254740993, "b": {}}`, keys: 2},
		{raw: `[1]`, wantErr: "parameters: Invalid value: \"array\": must be a JSON object"},
		{raw: `{"a": 1} {}`, wantErr: "unexpected data after the JSON value"},
		{raw: `{"a": `, wantErr: "is not valid JSON"},
	} {
		m, ferr := DecodeObject(path, []byte(tc.raw))
		switch {
		case tc.wantErr != "":
			if ferr == nil || !strings.Contains(ferr.Error(), tc.wantErr) {
				t.Errorf("DecodeObject(%q) = %v, want an error with %q", tc.raw, ferr, tc.wantErr)
			}
		case ferr != nil || len(m) != tc.keys:
			t.Errorf("DecodeObject(%q) = %v, %v; want %d keys", tc.raw, m, ferr, tc.keys)
		}
	}
	m, _ := DecodeObject(path, []byte(`{"a": 9007199254740993}`))
	if n, ok := m["a"].(json.Number); !ok || n.String() != "9007199254740993" {
		t.Errorf("number not kept exact: %#v", m["a"])
	}
}

func TestUnknownKeys(t *testing.T) {
	path := field.NewPath("parameters", "resources")
	m := map[string]any{"cpu": 1, "mem0ry": "1Gi", "ram": "1Gi", "zzz": 1}
	errs := UnknownKeys(path, "resources", m, []string{"cpu", "memory"}, map[string]string{"ram": "resources.memory"})
	var got []string
	for _, e := range errs {
		got = append(got, e.Field+": "+e.Detail)
	}
	want := []string{
		`parameters.resources.mem0ry: unknown parameter (did you mean "resources.memory"?)`,
		`parameters.resources.ram: unknown parameter (did you mean "resources.memory"?)`,
		`parameters.resources.zzz: unknown parameter; supported: "cpu", "memory"`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("UnknownKeys:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestReaders(t *testing.T) {
	p := field.NewPath("x")
	if _, ok := Present(map[string]any{"a": nil}, "a"); ok {
		t.Error("Present: null counts as absent")
	}
	if m, err := Object(p, nil); m != nil || err != nil {
		t.Errorf("Object(nil) = %v, %v", m, err)
	}
	if _, err := Object(p, "s"); err == nil {
		t.Error("Object accepted a string")
	}
	if _, err := String(p, 1); err == nil {
		t.Error("String accepted a number")
	}
	if errs := AppendErr(AppendErr(nil, nil), field.Required(p, "")); len(errs) != 1 {
		t.Errorf("AppendErr: %v", errs)
	}
	if got := Abbreviate([]byte(strings.Repeat("x", 70))); got != strings.Repeat("x", 64)+"..." {
		t.Errorf("Abbreviate: %q", got)
	}
	if got := QuoteAll([]string{"a", `b"`}); got != `"a", "b\""` {
		t.Errorf("QuoteAll: %s", got)
	}
}
