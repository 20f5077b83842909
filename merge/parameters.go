package merge

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Side names used in [InputError.Side], so that error messages tell the user
// which resource to fix.
const (
	SideClass       = "class parameters"
	SideExporterSet = "exporterset parameters"
)

// ErrNotObject is wrapped by [InputError] when a side's top-level JSON value
// is valid but not an object; parameters are always a map of names to values.
var ErrNotObject = errors.New("top level must be a JSON object")

// InputError reports that one side of a parameters merge could not be used.
// Side is [SideClass] or [SideExporterSet] (or whatever label was given to
// [Decode]), so callers can attribute the problem to the right resource, for
// example in a status condition.
type InputError struct {
	Side string
	Err  error
}

// Error returns the side name followed by the underlying problem.
func (e *InputError) Error() string { return e.Side + ": " + e.Err.Error() }

// Unwrap exposes the underlying error, for example [ErrNotObject] or a
// *json.SyntaxError.
func (e *InputError) Unwrap() error { return e.Err }

// Parameters merges the ExporterSet parameters set over the VirtualTargetClass
// parameters class as an RFC 7386 JSON merge patch and returns the result as
// canonical JSON (compact, keys sorted, numbers verbatim, no HTML escaping).
// Empty input on either side counts as {}. An invalid side yields an
// [*InputError] naming that side; class is checked first.
func Parameters(class, set []byte) ([]byte, error) {
	base, err := Decode(SideClass, class)
	if err != nil {
		return nil, err
	}
	overlay, err := Decode(SideExporterSet, set)
	if err != nil {
		return nil, err
	}
	return encode(Objects(base, overlay))
}

// Objects merges overlay over base as an RFC 7386 JSON merge patch on
// already-decoded values, as produced by [Decode]: json.Number, string, bool,
// nil, []any and map[string]any. A nil value in overlay deletes the key.
//
// The result is a fresh deep copy: it shares no map or slice with either
// input, and neither input is modified, so decoded inputs can be cached and
// the result handed out freely. Values of other types are copied as they are,
// so only the types listed above are guaranteed not to be shared. The result
// is never nil.
func Objects(base, overlay map[string]any) map[string]any {
	return mergeObjects(base, overlay)
}

// Decode parses raw as the parameters of the named side. It keeps numbers as
// json.Number so they survive a round trip byte-exact, treats empty input
// (only whitespace, or nil) as {}, and rejects invalid JSON, trailing data and
// a non-object top level with an [*InputError] carrying side.
func Decode(side string, raw []byte) (map[string]any, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, &InputError{Side: side, Err: fmt.Errorf("invalid JSON: %w", err)}
	}
	// Decoder stops after the first value; "{} {}" or "{}x" must not be
	// accepted as if the rest were not there.
	if _, err := dec.Token(); err != io.EOF {
		return nil, &InputError{Side: side, Err: errors.New("invalid JSON: unexpected data after top-level value")}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, &InputError{Side: side, Err: fmt.Errorf("%w, got %s", ErrNotObject, KindOf(v))}
	}
	return obj, nil
}

// mergePatch is the RFC 7386 MergePatch(target, patch) function on decoded
// values, returning a fresh value that shares nothing with its arguments.
// A non-object patch replaces the target; an object patch merges into the
// target, or into {} if the target is not an object.
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return deepCopy(patch)
	}
	t, _ := target.(map[string]any)
	return mergeObjects(t, p)
}

// mergeObjects builds the merged object from scratch instead of copying base
// and patching it, so that nothing in base is ever written to.
func mergeObjects(base, overlay map[string]any) map[string]any {
	out := make(map[string]any, len(base)+len(overlay))
	for k, v := range base {
		if _, patched := overlay[k]; !patched {
			out[k] = deepCopy(v)
		}
	}
	for k, v := range overlay {
		if v == nil {
			continue // explicit null deletes the key
		}
		out[k] = mergePatch(base[k], v)
	}
	return out
}

// deepCopy copies the container types produced by JSON decoding; scalars are
// immutable and returned as they are.
func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		if v == nil {
			return []any(nil)
		}
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopy(e)
		}
		return out
	default:
		return v
	}
}

// encode writes obj canonically. HTML escaping is turned off because the
// result is configuration, not HTML, and "\u003c" in place of "<" only makes
// it harder to read in logs and status.
func encode(obj map[string]any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(obj); err != nil {
		return nil, fmt.Errorf("encoding merged parameters: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// KindOf names a decoded JSON value's type the way JSON does ("object", "array",
// "number", ...), for error messages about parameters.
func KindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number, float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return fmt.Sprintf("%T", v)
	}
}
