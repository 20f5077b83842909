package kubevirt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/fieldcheck"
)

// forwardHost is where the port-forward sidecar listens: the Pod's loopback, which only the
// Pod's containers reach, so a guest port is not exposed on the Pod network.
const forwardHost = "127.0.0.1"

// checkDrivers checks the config of every entry of a type in driverSpecs: unknown keys (with
// did-you-mean), missing required keys and value types.
func checkDrivers(drivers []vtv1alpha1.DriverSpec) field.ErrorList {
	var errs field.ErrorList
	for i, d := range drivers {
		spec := lookupDriver(d.Type)
		if spec == nil {
			continue
		}
		path := driversPath.Index(i).Child("config")
		cfg := map[string]any{}
		if d.Config != nil && len(bytes.TrimSpace(d.Config.Raw)) > 0 && string(bytes.TrimSpace(d.Config.Raw)) != "null" {
			dec := json.NewDecoder(bytes.NewReader(d.Config.Raw))
			dec.UseNumber()
			if err := dec.Decode(&cfg); err != nil {
				errs = append(errs, field.Invalid(path, fieldcheck.Abbreviate(d.Config.Raw), "must be a JSON object"))
				continue
			}
		}
		errs = append(errs, checkConfig(path, spec, cfg)...)
	}
	return errs
}

// checkConfig checks one decoded config: unknown keys first, sorted, then the fields in table
// order, so the messages come in a stable order.
func checkConfig(path *field.Path, spec *driverSpec, cfg map[string]any) field.ErrorList {
	var errs field.ErrorList
	names := make([]string, len(spec.fields))
	for i, f := range spec.fields {
		names[i] = f.name
	}
	keys := make([]string, 0, len(cfg))
	for k := range cfg {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if slices.Contains(names, k) {
			continue
		}
		detail := fmt.Sprintf("%s takes no such key; it takes %s", spec.typ, fieldcheck.QuoteAll(names))
		for _, f := range spec.fields {
			if slices.Contains(f.aliases, k) {
				detail = fmt.Sprintf("%s takes no such key (did you mean %q?)", spec.typ, f.name)
			}
		}
		if s := fieldcheck.Suggest(k, names); s != "" {
			detail = fmt.Sprintf("%s takes no such key (did you mean %q?)", spec.typ, s)
		}
		errs = append(errs, &field.Error{Type: field.ErrorTypeNotSupported, Field: path.Child(k).String(), BadValue: k, Detail: detail})
	}
	for _, f := range spec.fields {
		v, ok := cfg[f.name]
		p := path.Child(f.name)
		switch {
		case !ok || v == nil:
			if f.required {
				errs = append(errs, field.Required(p, "the driver has no default"))
			}
		case f.kind == kindString:
			if _, isStr := v.(string); !isStr {
				errs = append(errs, field.TypeInvalid(p, v, "must be a string"))
			}
		case f.kind == kindBool:
			if _, isBool := v.(bool); !isBool {
				errs = append(errs, field.TypeInvalid(p, v, "must be true or false"))
			}
		case f.kind == kindInt:
			if _, ferr := intValue(p, v, f.lo, f.hi, false); ferr != nil {
				errs = append(errs, ferr)
			}
		}
	}
	return errs
}

// enrichDrivers returns the set's drivers and, for each forward the set has no entry of that
// name for, a TcpNetwork driver to the sidecar's local port. An entry the set defines wins
// whole: a person may point "ssh" elsewhere.
func enrichDrivers(req *provisioner.Request, pl *plan) ([]vtv1alpha1.DriverSpec, error) {
	out := provisioner.TemplateDrivers(req)
	for _, f := range pl.params.forwards {
		if slices.ContainsFunc(out, func(d vtv1alpha1.DriverSpec) bool { return d.Name == f.name }) {
			continue
		}
		cfg := `{"host":` + strconv.Quote(forwardHost) + `,"port":` + strconv.Itoa(int(f.localPort)) + `}`
		out = append(out, vtv1alpha1.DriverSpec{
			Name: f.name, Type: TCPNetworkDriverType, Config: &apiextensionsv1.JSON{Raw: []byte(cfg)},
		})
	}
	return out, nil
}
