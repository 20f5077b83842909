package merge

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// FuzzParameters checks the RFC 7386 properties of Parameters and Objects on
// arbitrary inputs: invalid inputs give an *InputError (never a panic), and
// valid object inputs satisfy identity, idempotence, leaf placement, null
// deletion, preservation of untouched keys, agreement with the RFC's
// pseudocode, and immutability of the inputs.
func FuzzParameters(f *testing.F) {
	seeds := [][2]string{
		{`{}`, `{}`},
		{``, ``},
		{`{"a":"b"}`, `{"a":"c"}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`},
		{`{"a": {"b": "c"}}`, `{"a": {"b": "d", "c": null}}`},
		{`{"a": [{"b":"c"}]}`, `{"a": [1]}`},
		{`{"e":null}`, `{"a":1}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`},
		{`{"o":{"a":1}}`, `{"o":"flat"}`},
		{`{"o":"flat"}`, `{"o":{"a":1,"n":null}}`},
		{`{"big":9007199254740993,"huge":1e400,"z":-0,"d":0.10}`, `{"big":1E+2}`},
		{`{"l":[null,{"a":null}]}`, `{"l":[null]}`},
		{`{"s":"<&>\u00e9"}`, `{"s":"\ud83d\ude00"}`},
		{`{"a":1,"a":2}`, `{"a":{"a":null}}`},
		{`["a"]`, `{}`},
		{`{}`, `null`},
		{`{"a":`, `{}`},
		{`{}`, `{} {}`},
		{"{\"\xff\":1}", `{}`},
	}
	for _, s := range seeds {
		f.Add([]byte(s[0]), []byte(s[1]))
	}

	f.Fuzz(func(t *testing.T, class, set []byte) {
		classBefore := bytes.Clone(class)
		setBefore := bytes.Clone(set)

		out, err := Parameters(class, set)

		if !bytes.Equal(class, classBefore) || !bytes.Equal(set, setBefore) {
			t.Fatalf("Parameters modified its input bytes")
		}
		base, baseErr := Decode(SideClass, class)
		overlay, overlayErr := Decode(SideExporterSet, set)
		if baseErr != nil || overlayErr != nil {
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("invalid input: Parameters error = %v, want *InputError", err)
			}
			wantSide := SideClass
			if baseErr == nil {
				wantSide = SideExporterSet
			}
			if ie.Side != wantSide {
				t.Fatalf("error side = %q, want %q (%v)", ie.Side, wantSide, err)
			}
			if out != nil {
				t.Fatalf("result %q returned with error", out)
			}
			return
		}
		if err != nil {
			t.Fatalf("valid inputs: Parameters: %v", err)
		}

		// (e) The result is always a valid JSON object.
		result, err := Decode("result", out)
		if err != nil {
			t.Fatalf("result %q is not a JSON object: %v", out, err)
		}

		// Parameters agrees with Objects and with the RFC pseudocode.
		if diff := cmp.Diff(any(result), any(Objects(base, overlay))); diff != "" {
			t.Fatalf("Parameters vs Objects (-parameters +objects):\n%s", diff)
		}
		if diff := cmp.Diff(referenceMergePatch(deepCopy(base), deepCopy(overlay)), any(result)); diff != "" {
			t.Fatalf("mismatch with RFC 7386 pseudocode (-reference +got):\n%s", diff)
		}

		// (a) Merging {} over base gives base back.
		ident, err := Parameters(class, []byte(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		identObj, err := Decode("identity", ident)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(base, identObj); diff != "" {
			t.Fatalf("merge(base, {}) != base (-base +got):\n%s", diff)
		}

		// (b) Idempotence: applying the same overlay again changes nothing.
		again, err := Parameters(out, set)
		if err != nil {
			t.Fatalf("re-merge: %v", err)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("not idempotent:\n once: %s\ntwice: %s", out, again)
		}

		// (c) Overlay leaves land at their paths, nulls delete, and keys the
		// overlay does not mention keep the base value.
		checkOverlay(t, "", overlay, result)
		checkPreserved(t, "", base, overlay, result)

		// (d) Objects does not mutate its inputs, and the result shares
		// nothing with them.
		baseSnap, overlaySnap := deepCopy(base), deepCopy(overlay)
		merged := Objects(base, overlay)
		scribble(merged)
		if diff := cmp.Diff(baseSnap, any(base)); diff != "" {
			t.Fatalf("base changed (-before +after):\n%s", diff)
		}
		if diff := cmp.Diff(overlaySnap, any(overlay)); diff != "" {
			t.Fatalf("overlay changed (-before +after):\n%s", diff)
		}
	})
}

// referenceMergePatch is the RFC 7386 section 2 pseudocode, transcribed
// literally (mutating target in place), as an independent oracle.
func referenceMergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	for name, value := range p {
		if value == nil {
			delete(t, name)
		} else {
			t[name] = referenceMergePatch(t[name], value)
		}
	}
	return t
}

// checkOverlay asserts that every non-null overlay leaf is in result at the
// same path and every null overlay key is absent from it.
func checkOverlay(t *testing.T, path string, overlay, result map[string]any) {
	t.Helper()
	for k, v := range overlay {
		p := path + "/" + k
		got, ok := result[k]
		switch v := v.(type) {
		case nil:
			if ok {
				t.Fatalf("%s: null in overlay but present in result: %v", p, got)
			}
		case map[string]any:
			obj, isObj := got.(map[string]any)
			if !isObj {
				t.Fatalf("%s: overlay object but result has %v", p, got)
			}
			checkOverlay(t, p, v, obj)
		default:
			if !ok {
				t.Fatalf("%s: overlay leaf missing from result", p)
			}
			if diff := cmp.Diff(any(v), got); diff != "" {
				t.Fatalf("%s: overlay leaf not in result (-overlay +result):\n%s", p, diff)
			}
		}
	}
}

// checkPreserved asserts that base keys the overlay does not mention keep
// their base value, recursing where both sides are objects.
func checkPreserved(t *testing.T, path string, base, overlay, result map[string]any) {
	t.Helper()
	for k, bv := range base {
		p := path + "/" + k
		ov, mentioned := overlay[k]
		if !mentioned {
			if diff := cmp.Diff(bv, result[k]); diff != "" {
				t.Fatalf("%s: base value not preserved (-base +result):\n%s", p, diff)
			}
			continue
		}
		bObj, bIsObj := bv.(map[string]any)
		oObj, oIsObj := ov.(map[string]any)
		rObj, rIsObj := result[k].(map[string]any)
		if bIsObj && oIsObj && rIsObj {
			checkPreserved(t, p, bObj, oObj, rObj)
		}
	}
}

// TestReferenceMergePatchIsNotTrivial guards the oracle itself against being
// edited into something that always agrees.
func TestReferenceMergePatchIsNotTrivial(t *testing.T) {
	got, err := json.Marshal(referenceMergePatch(
		map[string]any{"a": "b", "c": map[string]any{"d": "e"}},
		map[string]any{"a": nil, "c": map[string]any{"f": "g"}},
	))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`{"c":{"d":"e","f":"g"}}`, string(got)); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}
