package qemu

import (
	"encoding/json"
	"regexp"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

const (
	kibi = int64(1) << 10
	mebi = int64(1) << 20
	gibi = int64(1) << 30
	pebi = int64(1) << 50
	// sectorSize is the granularity qemu-img resize accepts for a disk.
	sectorSize = 512
)

// maxBytes bounds memory and storage: far above any real guest, and low enough that sizes
// plus overhead never overflow an int64.
var maxBytes = *resource.NewQuantity(pebi, resource.BinarySI)

// quantityExample is shown with every quantity error.
const quantityExample = `(e.g. "2Gi")`

// parseQuantity reads a JSON value as a Kubernetes quantity. Quantities arrive as strings
// ("2Gi") or as JSON numbers (upstream's sample class has `cpu: 2`); a number is read from
// its exact text, never through a float.
func parseQuantity(path *field.Path, v any) (resource.Quantity, *field.Error) {
	var text string
	switch v := v.(type) {
	case string:
		text = v
	case json.Number:
		text = v.String()
	default:
		return resource.Quantity{}, field.TypeInvalid(path, v, "must be a quantity: a string such as \"2Gi\" or a number")
	}
	if !quantityInRange(text) {
		return resource.Quantity{}, field.Invalid(path, v, "is out of range")
	}
	q, err := resource.ParseQuantity(text)
	if err != nil {
		return resource.Quantity{}, field.Invalid(path, v, "is not a quantity "+quantityExample)
	}
	if q.Sign() <= 0 {
		return resource.Quantity{}, field.Invalid(path, v, "must be positive")
	}
	return q, nil
}

// exponent matches a quantity's decimal exponent ("1e3", "5E-2"); "1E" alone is exa.
var exponent = regexp.MustCompile(`[eE]([+-]?[0-9]+)$`)

// quantityInRange refuses texts whose value is astronomically large or small before they
// are parsed: comparing "1e1000000000" with anything computes 10^(10^9) and never returns.
// No real size or CPU count needs more than 64 characters or an exponent beyond ±30.
func quantityInRange(text string) bool {
	if len(text) > 64 {
		return false
	}
	if m := exponent.FindStringSubmatch(text); m != nil {
		e, err := strconv.Atoi(m[1])
		return err == nil && e >= -30 && e <= 30
	}
	return true
}

// parseBytes reads a JSON value as a whole, positive number of bytes, at most 1Pi.
func parseBytes(path *field.Path, v any) (int64, *field.Error) {
	q, ferr := parseQuantity(path, v)
	if ferr != nil {
		return 0, ferr
	}
	if q.Cmp(maxBytes) > 0 {
		return 0, field.Invalid(path, v, "must be at most 1Pi")
	}
	b := q.Value() // rounds a fraction up; caught just below
	if q.Cmp(*resource.NewQuantity(b, resource.BinarySI)) != 0 {
		return 0, field.Invalid(path, v, "must be a whole number of bytes")
	}
	return b, nil
}

// parseCPUs reads a JSON value as a whole number of CPUs between 1 and max; suffix says why
// max is what it is.
func parseCPUs(path *field.Path, v any, max int64, suffix string) (int64, *field.Error) {
	q, ferr := parseQuantity(path, v)
	if ferr != nil {
		return 0, ferr
	}
	if q.Cmp(*resource.NewQuantity(max, resource.DecimalSI)) > 0 {
		return 0, field.Invalid(path, v, "must be at most "+strconv.FormatInt(max, 10)+suffix)
	}
	milli := q.MilliValue()
	if milli%1000 != 0 {
		return 0, field.Invalid(path, v, "must be a whole number of CPUs (QEMU's smp)")
	}
	return milli / 1000, nil
}

// qemuSize writes bytes the way QEMU's -m and qemu-img (and the QEMU driver's size parser)
// read them: "4G" is 4 GiB there, so Kubernetes' 4Gi becomes 4G. A size that is not a whole
// KiB is written as plain bytes, which qemu-img takes as bytes.
func qemuSize(bytes int64) string {
	switch {
	case bytes%gibi == 0:
		return strconv.FormatInt(bytes/gibi, 10) + "G"
	case bytes%mebi == 0:
		return strconv.FormatInt(bytes/mebi, 10) + "M"
	case bytes%kibi == 0:
		return strconv.FormatInt(bytes/kibi, 10) + "K"
	default:
		return strconv.FormatInt(bytes, 10)
	}
}
