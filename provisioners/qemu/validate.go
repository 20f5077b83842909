package qemu

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/exporterset/exporterset/provisioner/fieldcheck"
)

// parametersPath roots every parameter error, as the Provisioner contract asks.
var parametersPath = field.NewPath("parameters")

// Keys of each parameter object, sorted; the schema test keeps schema.json in step.
var (
	topKeys       = []string{"arch", "firmware", "machineType", "resources", "storage"}
	resourcesKeys = []string{"cpu", "memory", "storage"}
	storageKeys   = []string{"accessModes", "fsOverhead", "storageClassName"}
)

// parseParameters decodes the merged parameters strictly and applies the defaults. It
// returns nil parameters whenever there is an error, so nothing renders from half-checked
// input. An explicit null counts as unset (a class may carry one; a set's null has already
// deleted the key in the merge).
func parseParameters(raw []byte) (*parameters, field.ErrorList) {
	top, ferr := fieldcheck.DecodeObject(parametersPath, raw)
	if ferr != nil {
		return nil, field.ErrorList{ferr}
	}
	var errs field.ErrorList
	p := &parameters{}
	errs = append(errs, fieldcheck.UnknownKeys(parametersPath, "", top, topKeys, keyHints[""])...)

	// arch first: machineType, firmware and the CPU bound depend on it.
	spec, archOK := arches[defaultArch], true
	p.arch = defaultArch
	if v, ok := fieldcheck.Present(top, "arch"); ok {
		s, ferr := enum(parametersPath.Child("arch"), v, archNames, "")
		switch {
		case ferr != nil:
			errs, archOK = append(errs, ferr), false
		default:
			p.arch, spec = s, arches[s]
		}
	}

	p.machineType = spec.machineType
	if v, ok := fieldcheck.Present(top, "machineType"); ok {
		path := parametersPath.Child("machineType")
		if !archOK {
			_, ferr = fieldcheck.String(path, v)
		} else {
			p.machineType, ferr = enum(path, v, []string{spec.machineType}, forArch(p.arch))
		}
		errs = fieldcheck.AppendErr(errs, ferr)
	}

	p.firmware = defaultFirmware
	if v, ok := fieldcheck.Present(top, "firmware"); ok {
		path := parametersPath.Child("firmware")
		allowed, suffix := []string{FirmwareBIOS, FirmwareUEFI}, ""
		if archOK && len(spec.firmware) < len(allowed) {
			allowed, suffix = spec.firmware, forArch(p.arch)
		}
		p.firmware, ferr = enum(path, v, allowed, suffix)
		errs = fieldcheck.AppendErr(errs, ferr)
	}

	maxCPUs, cpuSuffix := spec.maxCPUs, " "+forArch(p.arch)
	if !archOK {
		maxCPUs, cpuSuffix = arches[ArchX86_64].maxCPUs, ""
	}
	resourcesPath := parametersPath.Child("resources")
	resources, ferr := fieldcheck.Object(resourcesPath, top["resources"])
	errs = fieldcheck.AppendErr(errs, ferr)
	errs = append(errs, fieldcheck.UnknownKeys(resourcesPath, "resources", resources, resourcesKeys, keyHints["resources"])...)

	p.cpus, _ = parseCPUs(nil, defaultCPU, maxCPUs, "")
	if v, ok := fieldcheck.Present(resources, "cpu"); ok {
		p.cpus, ferr = parseCPUs(resourcesPath.Child("cpu"), v, maxCPUs, cpuSuffix)
		errs = fieldcheck.AppendErr(errs, ferr)
	}

	p.memory, _ = parseBytes(nil, defaultMemory)
	if v, ok := fieldcheck.Present(resources, "memory"); ok {
		path := resourcesPath.Child("memory")
		p.memory, ferr = parseBytes(path, v)
		if ferr == nil && p.memory%mebi != 0 {
			ferr = field.Invalid(path, v, `must be a whole number of MiB (binary suffixes: "2Gi", not "2G")`)
		}
		errs = fieldcheck.AppendErr(errs, ferr)
	}

	p.storage, _ = parseBytes(nil, defaultStorage)
	if v, ok := fieldcheck.Present(resources, "storage"); ok {
		path := resourcesPath.Child("storage")
		p.storage, ferr = parseBytes(path, v)
		switch {
		case ferr != nil:
		case p.storage < mebi:
			ferr = field.Invalid(path, v, "must be at least 1Mi")
		case p.storage%sectorSize != 0:
			ferr = field.Invalid(path, v, "must be a multiple of 512 bytes (a disk sector)")
		}
		errs = fieldcheck.AppendErr(errs, ferr)
		p.storageSet = true
	}

	storagePath := parametersPath.Child("storage")
	storage, ferr := fieldcheck.Object(storagePath, top["storage"])
	errs = fieldcheck.AppendErr(errs, ferr)
	errs = append(errs, fieldcheck.UnknownKeys(storagePath, "storage", storage, storageKeys, keyHints["storage"])...)

	if v, ok := fieldcheck.Present(storage, "storageClassName"); ok {
		path := storagePath.Child("storageClassName")
		p.storageClassName, ferr = fieldcheck.String(path, v)
		if ferr == nil && p.storageClassName != "" {
			if msgs := validation.IsDNS1123Subdomain(p.storageClassName); len(msgs) > 0 {
				ferr = field.Invalid(path, v, strings.Join(msgs, "; "))
			}
		}
		errs = fieldcheck.AppendErr(errs, ferr)
	}

	p.accessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
	if v, ok := fieldcheck.Present(storage, "accessModes"); ok {
		path := storagePath.Child("accessModes")
		if p.storageClassName == "" {
			errs = append(errs, field.Forbidden(path, "applies only with storage.storageClassName: without one the guest disk is an emptyDir"))
		} else {
			var modeErrs field.ErrorList
			p.accessModes, modeErrs = accessModes(path, v)
			errs = append(errs, modeErrs...)
		}
	}

	p.fsOverheadPercent, _ = percent(nil, defaultFSOverhead)
	if v, ok := fieldcheck.Present(storage, "fsOverhead"); ok {
		p.fsOverheadPercent, ferr = percent(storagePath.Child("fsOverhead"), v)
		errs = fieldcheck.AppendErr(errs, ferr)
	}

	if len(errs) > 0 {
		return nil, errs
	}
	return p, nil
}

// enum reads a string parameter that must be one of allowed; suffix qualifies the list
// (e.g. `(for arch "aarch64")`). A near miss gets a did-you-mean.
func enum(path *field.Path, v any, allowed []string, suffix string) (string, *field.Error) {
	s, ferr := fieldcheck.String(path, v)
	if ferr != nil {
		return "", ferr
	}
	if slices.Contains(allowed, s) {
		return s, nil
	}
	ferr = field.NotSupported(path, s, allowed)
	if suffix != "" {
		ferr.Detail += " " + suffix
	}
	if hint, ok := valueHints[s]; ok && slices.Contains(allowed, hint) {
		ferr.Detail += fmt.Sprintf(" (did you mean %q?)", hint)
	} else if hint := fieldcheck.Suggest(s, allowed); hint != "" {
		ferr.Detail += fmt.Sprintf(" (did you mean %q?)", hint)
	}
	return "", ferr
}

// forArch qualifies an arch-dependent limit in a message.
func forArch(arch string) string { return fmt.Sprintf("(for arch %q)", arch) }

// accessModes reads storage.accessModes: a non-empty list of distinct writable modes, with
// ReadWriteOncePod alone (Kubernetes refuses it combined with others).
func accessModes(path *field.Path, v any) ([]corev1.PersistentVolumeAccessMode, field.ErrorList) {
	list, ok := v.([]any)
	if !ok {
		return nil, field.ErrorList{field.TypeInvalid(path, v, "must be a list of access modes")}
	}
	if len(list) == 0 {
		return nil, field.ErrorList{field.Invalid(path, list, "must not be empty")}
	}
	var errs field.ErrorList
	var modes []corev1.PersistentVolumeAccessMode
	allowed := make([]string, len(writableAccessModes))
	for i, m := range writableAccessModes {
		allowed[i] = string(m)
	}
	for i, item := range list {
		suffix := ""
		if item == string(corev1.ReadOnlyMany) {
			suffix = "(the guest disk is written to)"
		}
		s, ferr := enum(path.Index(i), item, allowed, suffix)
		switch {
		case ferr != nil:
			errs = append(errs, ferr)
		case slices.Contains(modes, corev1.PersistentVolumeAccessMode(s)):
			errs = append(errs, field.Duplicate(path.Index(i), s))
		default:
			modes = append(modes, corev1.PersistentVolumeAccessMode(s))
		}
	}
	if len(errs) == 0 && len(modes) > 1 && slices.Contains(modes, corev1.ReadWriteOncePod) {
		errs = append(errs, field.Invalid(path, list, "ReadWriteOncePod cannot be combined with other access modes"))
	}
	return modes, errs
}

// percentPattern matches "0%" to "999%"; the range is checked after.
var percentPattern = regexp.MustCompile(`^([0-9]{1,3})%$`)

// percent reads a percentage string from "0%" to "100%".
func percent(path *field.Path, v any) (int64, *field.Error) {
	s, ok := v.(string)
	if !ok {
		return 0, field.TypeInvalid(path, v, `must be a percentage string such as "10%"`)
	}
	m := percentPattern.FindStringSubmatch(s)
	if m == nil {
		return 0, field.Invalid(path, v, `must be a percentage from "0%" to "100%"`)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	if n > 100 {
		return 0, field.Invalid(path, v, `must be a percentage from "0%" to "100%"`)
	}
	return n, nil
}
