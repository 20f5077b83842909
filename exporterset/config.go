package exporterset

import (
	"encoding/base64"
	"fmt"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/internal/exportercfg"
)

// renderExporterConfig returns the config.yaml of an exporter (contract §3), as
// internal/exportercfg renders it: deterministic, so comparing bytes tells whether the
// Secret needs an update. The exporter exits after its lease unless the set reuses it. hooks
// (the set's parameters.hooks, checked) are written when there are some.
func renderExporterConfig(e *jumpstarterv1alpha1.Exporter, token string, caPEM []byte, recycle vtv1alpha1.RecycleStrategy, drivers []vtv1alpha1.DriverSpec, hooks *exportercfg.Hooks) ([]byte, error) {
	cfg := exportercfg.Config{
		APIVersion:     exportercfg.APIVersion,
		Kind:           exportercfg.Kind,
		Metadata:       exportercfg.Metadata{Namespace: e.Namespace, Name: e.Name},
		Endpoint:       e.Status.Endpoint,
		TLS:            exportercfg.TLS{CA: base64.StdEncoding.EncodeToString(caPEM)},
		Token:          token,
		ExitOnLeaseEnd: recycle != vtv1alpha1.RecycleInPlaceReuse,
		Export:         make(map[string]exportercfg.Driver, len(drivers)),
		Hooks:          hooks,
	}
	for _, d := range drivers {
		if _, dup := cfg.Export[d.Name]; dup {
			return nil, fmt.Errorf("driver %q is listed twice", d.Name)
		}
		x := exportercfg.Driver{Type: d.Type, Ref: d.Ref}
		if d.Config != nil {
			x.Config = d.Config.Raw
		}
		cfg.Export[d.Name] = x
	}
	return exportercfg.Render(&cfg)
}
