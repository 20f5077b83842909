package merge

import (
	"encoding/json"
	"testing"

	"dario.cat/mergo"
	"github.com/google/go-cmp/cmp"
)

// Tests of Objects and deepCopy: inputs never mutated nor aliased, nil inputs, and why
// mergo is not used on map[string]any.
func TestObjectsDoesNotMutateInputs(t *testing.T) {
	base := decodeAny(t, `{"a":{"b":{"c":1},"l":[1,{"x":2}]},"d":"keep","gone":{"z":1}}`).(map[string]any)
	overlay := decodeAny(t, `{"a":{"b":{"c":null,"n":2},"l":[3]},"gone":null,"new":{"q":[{"r":1}]}}`).(map[string]any)
	baseBefore := deepCopy(base)
	overlayBefore := deepCopy(overlay)

	got := Objects(base, overlay)

	want := decodeAny(t, `{"a":{"b":{"n":2},"l":[3]},"d":"keep","new":{"q":[{"r":1}]}}`)
	if diff := cmp.Diff(want, any(got)); diff != "" {
		t.Errorf("result mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(baseBefore, any(base)); diff != "" {
		t.Errorf("base mutated (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(overlayBefore, any(overlay)); diff != "" {
		t.Errorf("overlay mutated (-before +after):\n%s", diff)
	}
}

func TestObjectsNilInputs(t *testing.T) {
	for _, tt := range []struct {
		name          string
		base, overlay map[string]any
		want          map[string]any
	}{
		{"nil nil", nil, nil, map[string]any{}},
		{"nil base", nil, map[string]any{"a": "x", "b": nil}, map[string]any{"a": "x"}},
		{"nil overlay", map[string]any{"a": "x"}, nil, map[string]any{"a": "x"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := Objects(tt.base, tt.overlay)
			if got == nil {
				t.Fatal("Objects returned nil map")
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// scribble writes into every map and slice reachable from v (replacing
// scalars and adding a key), so that any container shared with another value
// shows up as a change there.
func scribble(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			switch e.(type) {
			case map[string]any, []any:
				scribble(e)
			default:
				v[k] = "scribbled"
			}
		}
		v["scribbled-key"] = true
	case []any:
		for i, e := range v {
			switch e.(type) {
			case map[string]any, []any:
				scribble(e)
			default:
				v[i] = "scribbled"
			}
		}
	}
}

func TestObjectsNoAliasing(t *testing.T) {
	const baseJSON = `{"keep":{"deep":{"x":1}},"list":[{"a":1},[2]],"merge":{"m":{"k":1}}}`
	const overlayJSON = `{"new":{"deep":{"y":2}},"newlist":[{"b":1},[3]],"merge":{"m":{"j":2}}}`

	t.Run("mutating result leaves inputs alone", func(t *testing.T) {
		base := decodeAny(t, baseJSON).(map[string]any)
		overlay := decodeAny(t, overlayJSON).(map[string]any)
		got := Objects(base, overlay)
		scribble(got)
		if diff := cmp.Diff(decodeAny(t, baseJSON), any(base)); diff != "" {
			t.Errorf("base changed through result (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(decodeAny(t, overlayJSON), any(overlay)); diff != "" {
			t.Errorf("overlay changed through result (-want +got):\n%s", diff)
		}
	})

	t.Run("mutating inputs leaves result alone", func(t *testing.T) {
		base := decodeAny(t, baseJSON).(map[string]any)
		overlay := decodeAny(t, overlayJSON).(map[string]any)
		got := Objects(base, overlay)
		want := deepCopy(got)
		scribble(base)
		scribble(overlay)
		if diff := cmp.Diff(want, any(got)); diff != "" {
			t.Errorf("result changed through inputs (-want +got):\n%s", diff)
		}
	})
}

func TestDeepCopyKeepsNilSlice(t *testing.T) {
	// A nil []any encodes as null and an empty one as []; copying must not
	// turn one into the other.
	got := deepCopy(map[string]any{"nil": []any(nil), "empty": []any{}}).(map[string]any)
	if got["nil"].([]any) != nil {
		t.Errorf("nil slice copied as non-nil")
	}
	if got["empty"].([]any) == nil {
		t.Errorf("empty slice copied as nil")
	}
}

// TestNaiveMergoPitfalls documents why Objects does not use mergo on
// map[string]any: the naive call aliases the source's nested maps, mutates
// the destination and keeps nulls instead of deleting. Objects does none of
// that on the same inputs.
func TestNaiveMergoPitfalls(t *testing.T) {
	newInputs := func() (dst, src map[string]any) {
		dst = map[string]any{"shared": map[string]any{"a": "class"}, "drop": "class"}
		src = map[string]any{"shared": map[string]any{"b": "set"}, "fresh": map[string]any{"c": "set"}, "drop": nil}
		return dst, src
	}

	dst, src := newInputs()
	if err := mergo.Merge(&dst, src, mergo.WithOverride); err != nil {
		t.Fatal(err)
	}
	if v, ok := dst["drop"]; !ok || v != nil {
		t.Errorf("mergo: drop = %v, %v; expected the pitfall: null stored, not deleted", v, ok)
	}
	dst["fresh"].(map[string]any)["c"] = "mutated"
	if src["fresh"].(map[string]any)["c"] != "mutated" {
		t.Errorf("mergo: expected the pitfall: result aliases the source's nested map")
	}

	base, overlay := newInputs()
	got := Objects(base, overlay)
	if _, ok := got["drop"]; ok {
		t.Errorf("Objects: null did not delete the key")
	}
	got["fresh"].(map[string]any)["c"] = "mutated"
	wantBase, wantOverlay := newInputs()
	if diff := cmp.Diff(wantBase, base); diff != "" {
		t.Errorf("Objects mutated base (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantOverlay, overlay); diff != "" {
		t.Errorf("Objects result aliases overlay (-want +got):\n%s", diff)
	}

	// The usual way to feed mergo, json.Unmarshal into any, loses precision.
	var f map[string]any
	if err := json.Unmarshal([]byte(`{"n":9007199254740993}`), &f); err != nil {
		t.Fatal(err)
	}
	if f["n"].(float64) != 9007199254740992 {
		t.Errorf("expected float64 drift to 9007199254740992, got %v", f["n"])
	}
}
