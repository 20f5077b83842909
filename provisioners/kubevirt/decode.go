package kubevirt

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

// decodeTop decodes the parameters document, keeping numbers exact.
func decodeTop(raw []byte) (map[string]any, *field.Error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return map[string]any{}, nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	err := dec.Decode(&v)
	if err == nil {
		if _, tail := dec.Token(); !errors.Is(tail, io.EOF) {
			err = errors.New("unexpected data after the JSON value")
		}
	}
	if err != nil {
		return nil, field.Invalid(parametersPath, abbreviate(raw), "is not valid JSON: "+err.Error())
	}
	if v == nil {
		return map[string]any{}, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, field.TypeInvalid(parametersPath, merge.KindOf(v), "must be a JSON object")
	}
	return m, nil
}

// present returns m[key] unless it is absent or null.
func present(m map[string]any, key string) (any, bool) {
	v, ok := m[key]
	return v, ok && v != nil
}

// object reads an optional nested parameter object; absent or null is empty.
func object(path *field.Path, v any) (map[string]any, *field.Error) {
	if v == nil {
		return nil, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, field.TypeInvalid(path, v, "must be an object")
	}
	return m, nil
}

// unknownKeys reports, in sorted order, the keys of m that are not known, each with a
// suggestion when one is close (a habit from keyHints, else by spelling), else the supported
// keys.
func unknownKeys(path *field.Path, object string, m map[string]any, known []string) field.ErrorList {
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
		detail := "unknown parameter; supported: " + quoteAll(known)
		if hint, ok := keyHints[object][k]; ok {
			detail = fmt.Sprintf("unknown parameter (did you mean %q?)", hint)
		} else if s := suggest(k, known); s != "" {
			detail = fmt.Sprintf("unknown parameter (did you mean %q?)", prefix+s)
		}
		errs = append(errs, &field.Error{
			Type: field.ErrorTypeNotSupported, Field: path.Child(k).String(), BadValue: k, Detail: detail,
		})
	}
	return errs
}

// stringValue reads a string parameter.
func stringValue(path *field.Path, v any) (string, *field.Error) {
	s, ok := v.(string)
	if !ok {
		return "", field.TypeInvalid(path, v, "must be a string")
	}
	return s, nil
}

// appendErr appends err when it is not nil.
func appendErr(errs field.ErrorList, err *field.Error) field.ErrorList {
	if err == nil {
		return errs
	}
	return append(errs, err)
}

// abbreviate shortens raw input quoted in a message.
func abbreviate(raw []byte) string {
	const max = 64
	if len(raw) <= max {
		return string(raw)
	}
	return string(raw[:max]) + "..."
}
