package qemu

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/fieldcheck"
)

// Upstream's driver packages are all named jumpstarter_driver_<name>; this provisioner knows
// the QEMU package's driver and two of the network package's.
const (
	driverPackagePrefix = "jumpstarter_driver_"
	qemuDriverModule    = "jumpstarter_driver_qemu.driver"
)

// misspeltType returns the known driver type typ is a typo of, or "". Only sure typos count,
// since anything else may be a real class the provisioner does not know: a known type in
// another case, a known class in a near-miss module, or a near miss of a class in the QEMU
// package's driver module. "jumpstarter_driver_network.driver.UdpNetwork" is two edits from
// TcpNetwork and real, so near misses elsewhere are only warned about.
func misspeltType(typ string) string {
	module, class := splitType(typ)
	for _, d := range driverSpecs {
		knownModule, knownClass := splitType(d.typ)
		switch {
		case strings.EqualFold(typ, d.typ):
			return d.typ
		case class == knownClass && fieldcheck.EditDistance(module, knownModule) <= 2:
			return d.typ
		}
	}
	if strings.EqualFold(module, qemuDriverModule) {
		var classes []string
		for _, d := range driverSpecs {
			if m, c := splitType(d.typ); m == qemuDriverModule {
				classes = append(classes, c)
			}
		}
		if c := fieldcheck.Suggest(class, classes); c != "" {
			return qemuDriverModule + "." + c
		}
	}
	return ""
}

// splitType splits a class path into its module and class name.
func splitType(typ string) (module, class string) {
	i := strings.LastIndexByte(typ, '.')
	if i < 0 {
		return "", typ
	}
	return typ[:i], typ[i+1:]
}

// checkTypes reports each entry whose type is a typo of a known one.
func checkTypes(drivers []vtv1alpha1.DriverSpec) field.ErrorList {
	var errs field.ErrorList
	for i, d := range drivers {
		if d.Type == "" || lookupDriver(d.Type) != nil {
			continue
		}
		if known := misspeltType(d.Type); known != "" {
			errs = append(errs, field.Invalid(driversPath.Index(i).Child("type"), d.Type,
				fmt.Sprintf("is not a driver class: `jmp run` could not import it (did you mean %q?)", known)))
		}
	}
	return errs
}

// driverWarnings warns about each entry of an upstream driver package (jumpstarter_driver_*)
// whose type the provisioner does not know and is not a sure typo: third-party and newer
// upstream drivers exist, so they pass, but a person should know they are not checked.
func driverWarnings(set *vtv1alpha1.ExporterSet) []provisioner.Warning {
	if set == nil {
		return nil
	}
	var out []provisioner.Warning
	for i, d := range set.Spec.Template.Spec.Drivers {
		if !strings.HasPrefix(d.Type, driverPackagePrefix) || lookupDriver(d.Type) != nil || misspeltType(d.Type) != "" {
			continue
		}
		msg := fmt.Sprintf("driver type %q is not one %s checks: its config is passed on unchecked, and the exporter image must provide it", d.Type, Name)
		if s := fieldcheck.Suggest(d.Type, DriverTypes()); s != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", s)
		}
		out = append(out, provisioner.Warning{Field: driversPath.Index(i).Child("type").String(), Message: msg})
	}
	return out
}

// checkRefs checks every ref entry: its first segment must name an entry of the set, and
// when that entry's type is known, its second segment one of the children that driver
// creates. configs are the decoded configs of the known-type entries (nil elsewhere). A
// deeper path is not checked: what children's children are is not known here.
func checkRefs(drivers []vtv1alpha1.DriverSpec, configs []map[string]any) field.ErrorList {
	names := make([]string, len(drivers))
	hasQemu := false
	for i, d := range drivers {
		names[i] = d.Name
		hasQemu = hasQemu || d.Type == QemuDriverType
	}
	var errs field.ErrorList
	for i, d := range drivers {
		if d.Ref == "" {
			continue
		}
		path := driversPath.Index(i).Child("ref")
		segments := strings.Split(d.Ref, ".")
		target := slices.Index(names, segments[0])
		if target < 0 {
			if segments[0] == SSHDriverName && hasQemu {
				continue // EnrichDrivers may add it
			}
			ferr := field.NotFound(path, d.Ref)
			ferr.Detail = fmt.Sprintf("no driver named %q in %s", segments[0], driversPath)
			if s := fieldcheck.Suggest(segments[0], names); s != "" {
				ferr.Detail += fmt.Sprintf(" (did you mean %q?)", s)
			}
			errs = append(errs, ferr)
			continue
		}
		spec := lookupDriver(drivers[target].Type)
		if len(segments) < 2 || spec == nil || configs[target] == nil {
			continue
		}
		var children []string
		if spec.children != nil {
			children = spec.children(configs[target])
		}
		if slices.Contains(children, segments[1]) {
			continue
		}
		ferr := field.NotFound(path, d.Ref)
		if len(children) == 0 {
			ferr.Detail = fmt.Sprintf("%s %q creates no child drivers", spec.typ, segments[0])
		} else {
			ferr.Detail = fmt.Sprintf("%s %q creates no child %q", spec.typ, segments[0], segments[1])
			if s := fieldcheck.Suggest(segments[1], children); s != "" {
				ferr.Detail += fmt.Sprintf(" (did you mean %q?)", segments[0]+"."+s)
			}
			ferr.Detail += "; its children: " + fieldcheck.QuoteAll(children)
		}
		errs = append(errs, ferr)
	}
	return errs
}
