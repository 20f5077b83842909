package qemu

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/exporterset/exporterset/merge"
	"github.com/exporterset/exporterset/provisioner/fieldcheck"
)

// valueCheck is a fieldSpec's further check of a value already of the right kind.
type valueCheck func(path *field.Path, v any) *field.Error

// checkObject checks a decoded config object against spec: unknown keys first, sorted, then
// every field in table order, so the messages come in a stable order.
func checkObject(path *field.Path, m map[string]any, spec *objectSpec) field.ErrorList {
	var errs field.ErrorList
	for _, k := range sortedKeys(m) {
		if spec.field(k) == nil {
			errs = append(errs, unknownField(path.Child(k), k, spec))
		}
	}
	for _, f := range spec.fields {
		v, ok := m[f.name]
		if !ok {
			if f.required {
				errs = append(errs, field.Required(path.Child(f.name), "the driver has no default ("+describe(f)+")"))
			}
			continue
		}
		errs = append(errs, checkValue(path.Child(f.name), f, v)...)
	}
	return errs
}

// field returns the spec of key, or nil.
func (o *objectSpec) field(key string) *fieldSpec {
	for i := range o.fields {
		if o.fields[i].name == key {
			return &o.fields[i]
		}
	}
	return nil
}

// checkValue checks one present value against its field.
func checkValue(path *field.Path, f fieldSpec, v any) field.ErrorList {
	if v == nil {
		switch {
		case f.nullable || f.filled:
			return nil
		case f.required:
			return field.ErrorList{field.Required(path, "must be "+describe(f)+", not null")}
		default:
			// Python would get None, which the driver does not expect.
			return field.ErrorList{field.Invalid(path, nil, "must be "+describe(f)+"; leave the key out for the driver's default")}
		}
	}
	var ferr *field.Error
	switch f.kind {
	case kindString:
		if _, ok := v.(string); !ok {
			ferr = field.TypeInvalid(path, shown(v), "must be a string")
		} else if len(f.enum) > 0 {
			_, ferr = enum(path, v, f.enum, "")
		}
	case kindInt:
		ferr = intValue(path, f.rng, v)
	case kindBool:
		if _, ok := v.(bool); !ok {
			ferr = field.TypeInvalid(path, shown(v), "must be true or false")
		}
	case kindSize:
		ferr = sizeValue(path, v)
	case kindStringMap:
		return stringMap(path, v)
	case kindObjectMap:
		return objectMap(path, f.entry, v)
	}
	if ferr == nil && f.check != nil {
		ferr = f.check(path, v)
	}
	return fieldcheck.AppendErr(nil, ferr)
}

// describe says in words what a field takes, for required and null messages.
func describe(f fieldSpec) string {
	switch f.kind {
	case kindInt:
		switch {
		case f.rng == nil:
			return "an integer"
		case f.rng.max == positive.max:
			return fmt.Sprintf("an integer of at least %d", f.rng.min)
		default:
			return fmt.Sprintf("an integer from %d to %d", f.rng.min, f.rng.max)
		}
	case kindBool:
		return "true or false"
	case kindSize:
		return `a size such as "512M" or "2G"`
	case kindStringMap:
		return "an object of strings"
	case kindObjectMap:
		return "an object of " + f.entry.many + " by name"
	default:
		return "a string"
	}
}

// intValue reads a JSON integer within rng. A string of digits is refused with the number
// suggested: the driver would pass the string on, and QEMU or pydantic then reads it or not.
func intValue(path *field.Path, rng *span, v any) *field.Error {
	n, isNumber := v.(json.Number)
	if !isNumber {
		if s, ok := v.(string); ok {
			if i, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil {
				return field.TypeInvalid(path, v, fmt.Sprintf("must be an integer, not a string (did you mean %d?)", i))
			}
		}
		return field.TypeInvalid(path, shown(v), "must be an integer")
	}
	i, err := strconv.ParseInt(n.String(), 10, 64)
	switch {
	case errors.Is(err, strconv.ErrRange):
		return field.Invalid(path, v, "is out of range")
	case err != nil:
		return field.Invalid(path, v, "must be an integer")
	case rng != nil && (i < rng.min || i > rng.max):
		return field.Invalid(path, v, "must be "+describe(fieldSpec{kind: kindInt, rng: rng}))
	}
	return nil
}

// driverSize is the QEMU driver's size syntax: it appends "iB" to a size ending in one of
// kmgtKMGT and parses the result, so "2G" is 2 GiB and "2Gi" becomes the invalid "2GiiB".
var driverSize = regexp.MustCompile(`^([0-9]+)[KMGTkmgt]$`)

// sizeValue checks a size in the driver's syntax; a Kubernetes quantity or a near miss gets
// the driver's spelling of the same size suggested.
func sizeValue(path *field.Path, v any) *field.Error {
	const syntax = "the driver's size syntax (a whole number and one of K, M, G, T, binary units)"
	s, ok := v.(string)
	if !ok {
		// The driver looks at the value's last character, which a number does not have.
		return field.TypeInvalid(path, shown(v), `must be a string in `+syntax+`, e.g. "512M" or "2G"`)
	}
	if m := driverSize.FindStringSubmatch(s); m != nil {
		if strings.Trim(m[1], "0") == "" {
			return field.Invalid(path, v, "must be more than zero")
		}
		return nil
	}
	if hint := suggestSize(s); hint != "" {
		return field.Invalid(path, v, fmt.Sprintf("is not %s: did you mean %q?", syntax, hint))
	}
	return field.Invalid(path, v, `is not `+syntax+`, e.g. "512M" or "2G"`)
}

// suggestSize returns the driver's spelling of what s most likely means, or "": "2Gi" (a
// Kubernetes quantity) is "2G", "1.5Gi" is "1536M", "2 GB" and "2GiB" are "2G". A size that
// is not a whole KiB has no spelling in the driver's syntax.
func suggestSize(s string) string {
	t := strings.ReplaceAll(s, " ", "")
	switch {
	case strings.HasSuffix(t, "iB"):
		t = strings.TrimSuffix(t, "B")
	case len(t) > 2 && strings.HasSuffix(t, "B") && strings.ContainsRune("KMGTkmgt", rune(t[len(t)-2])):
		t = strings.TrimSuffix(t, "B")
	}
	if m := driverSize.FindStringSubmatch(t); m != nil && strings.Trim(m[1], "0") != "" {
		return t
	}
	if !quantityInRange(t) {
		return ""
	}
	q, err := resource.ParseQuantity(t)
	if err != nil || q.Sign() <= 0 || q.Cmp(maxBytes) > 0 {
		return ""
	}
	b := q.Value()
	if q.Cmp(*resource.NewQuantity(b, resource.BinarySI)) != 0 || b%kibi != 0 {
		return ""
	}
	return qemuSize(b)
}

// stringMap checks an object of strings (default_partitions: partition name to file path).
func stringMap(path *field.Path, v any) field.ErrorList {
	m, ok := v.(map[string]any)
	if !ok {
		return field.ErrorList{field.TypeInvalid(path, shown(v), "must be an object of strings")}
	}
	var errs field.ErrorList
	for _, k := range sortedKeys(m) {
		if _, ok := m[k].(string); !ok {
			errs = append(errs, field.TypeInvalid(path.Key(k), shown(m[k]), "must be a string"))
		}
	}
	return errs
}

// objectMap checks an object whose values are objects of entry (hostfwd: name to forward).
func objectMap(path *field.Path, entry *objectSpec, v any) field.ErrorList {
	m, ok := v.(map[string]any)
	if !ok {
		return field.ErrorList{field.TypeInvalid(path, shown(v), "must be an object of "+entry.many+" by name")}
	}
	var errs field.ErrorList
	for _, k := range sortedKeys(m) {
		obj, ok := m[k].(map[string]any)
		if !ok {
			errs = append(errs, field.TypeInvalid(path.Key(k), shown(m[k]), "must be an object ("+entry.what+")"))
			continue
		}
		errs = append(errs, checkObject(path.Key(k), obj, entry)...)
	}
	return errs
}

// unknownField reports a key the object does not declare, with the field most likely meant,
// else the fields there are.
func unknownField(path *field.Path, key string, spec *objectSpec) *field.Error {
	detail := "not a field of " + spec.what
	if s := suggestField(key, spec.fields); s != "" {
		detail += fmt.Sprintf(" (did you mean %q?)", s)
	} else {
		names := make([]string, len(spec.fields))
		for i, f := range spec.fields {
			names[i] = f.name
		}
		detail += "; its fields: " + fieldcheck.QuoteAll(names)
	}
	return &field.Error{Type: field.ErrorTypeNotSupported, Field: path.String(), BadValue: key, Detail: detail}
}

// suggestField returns the field key most likely means, or "": a known alias ("memory" for
// "mem"), the same name in another case or separator style ("diskSize"), a near miss by edit
// distance, or else a name one starts with the other (three letters at least).
func suggestField(key string, fields []fieldSpec) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
		if slices.ContainsFunc(f.aliases, func(a string) bool { return strings.EqualFold(a, key) }) {
			return f.name
		}
	}
	norm := normalizeKey(key)
	for _, n := range names {
		if normalizeKey(n) == norm {
			return n
		}
	}
	if s := fieldcheck.Suggest(key, names); s != "" {
		return s
	}
	for _, n := range names {
		nn := normalizeKey(n)
		if len(nn) >= 3 && len(norm) >= 3 && (strings.HasPrefix(norm, nn) || strings.HasPrefix(nn, norm)) {
			return n
		}
	}
	return ""
}

// normalizeKey folds case and drops separators: "diskSize", "disk-size" and "disk_size" meet.
func normalizeKey(k string) string {
	return strings.NewReplacer("_", "", "-", "").Replace(strings.ToLower(k))
}

// checkArch refuses the Kubernetes and Debian names of an arch: there is no
// qemu-system-amd64. Other names pass, for runtime images with more emulators.
func checkArch(path *field.Path, v any) *field.Error {
	s, _ := v.(string)
	if hint, ok := valueHints[s]; ok && slices.Contains(archNames, hint) {
		return field.Invalid(path, v, fmt.Sprintf("names no QEMU system emulator (qemu-system-%s) (did you mean %q?)", s, hint))
	}
	return nil
}

// checkLauncherSocket keeps the socket where target-runtime serves it.
func checkLauncherSocket(path *field.Path, v any) *field.Error {
	if v != LauncherSocketPath {
		return field.Invalid(path, v, fmt.Sprintf("must be %q or unset: the target-runtime container serves the launcher there", LauncherSocketPath))
	}
	return nil
}

// shown is a value as an error message shows it: objects and arrays by their kind only.
func shown(v any) any {
	switch v.(type) {
	case map[string]any, []any:
		return merge.KindOf(v)
	}
	return v
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
