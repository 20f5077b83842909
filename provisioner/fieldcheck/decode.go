package fieldcheck

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/exporterset/exporterset/merge"
)

// DecodeObject decodes a parameters document at path, keeping numbers exact (json.Number).
// Empty input and null are an empty object; anything but one JSON object is an error.
func DecodeObject(path *field.Path, raw []byte) (map[string]any, *field.Error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{}, nil
	}
	v, err := DecodeJSON(raw)
	if err != nil {
		return nil, field.Invalid(path, Abbreviate(raw), "is not valid JSON: "+err.Error())
	}
	if v == nil {
		return map[string]any{}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, field.TypeInvalid(path, merge.KindOf(v), "must be a JSON object")
	}
	return m, nil
}

// DecodeJSON decodes one JSON document with exact numbers and nothing after it.
func DecodeJSON(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("unexpected data after the JSON value")
	}
	return v, nil
}

// Present returns m[key] unless it is absent or null.
func Present(m map[string]any, key string) (any, bool) {
	v, ok := m[key]
	return v, ok && v != nil
}

// Object reads an optional nested object; absent or null is empty (nil).
func Object(path *field.Path, v any) (map[string]any, *field.Error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, field.TypeInvalid(path, v, "must be an object")
	}
	return m, nil
}

// String reads a string value.
func String(path *field.Path, v any) (string, *field.Error) {
	s, ok := v.(string)
	if !ok {
		return "", field.TypeInvalid(path, v, "must be a string")
	}
	return s, nil
}

// UnknownKeys reports, in sorted order, the keys of m (the object at path, named object
// relative to the parameters, "" for the top level) that are not among known. Each gets a
// suggestion when one is close: hints first (keys people write by habit, mapped to the
// parameter they mean), else the nearest known key by spelling; else the supported keys.
func UnknownKeys(path *field.Path, object string, m map[string]any, known []string, hints map[string]string) field.ErrorList {
	var unknown []string
	for k := range m {
		if !slices.Contains(known, k) {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	prefix := ""
	if object != "" {
		prefix = object + "."
	}
	var errs field.ErrorList
	for _, k := range unknown {
		detail := "unknown parameter; supported: " + QuoteAll(known)
		if hint, ok := hints[k]; ok {
			detail = fmt.Sprintf("unknown parameter (did you mean %q?)", hint)
		} else if s := Suggest(k, known); s != "" {
			detail = fmt.Sprintf("unknown parameter (did you mean %q?)", prefix+s)
		}
		errs = append(errs, &field.Error{
			Type: field.ErrorTypeNotSupported, Field: path.Child(k).String(), BadValue: k, Detail: detail,
		})
	}
	return errs
}

// AppendErr appends err when it is not nil.
func AppendErr(errs field.ErrorList, err *field.Error) field.ErrorList {
	if err == nil {
		return errs
	}
	return append(errs, err)
}

// Abbreviate shortens raw input quoted in a message to 64 bytes.
func Abbreviate(raw []byte) string {
	const limit = 64
	if len(raw) <= limit {
		return string(raw)
	}
	return string(raw[:limit]) + "..."
}
