package exporterset

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"sigs.k8s.io/yaml"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// ExporterConfig is the file `jmp run --exporter-config` reads (contract §3).
type ExporterConfig struct {
	APIVersion     string                  `json:"apiVersion"`
	Kind           string                  `json:"kind"`
	Metadata       ExporterConfigMetadata  `json:"metadata"`
	Endpoint       string                  `json:"endpoint"`
	TLS            ExporterConfigTLS       `json:"tls"`
	Token          string                  `json:"token"`
	ExitOnLeaseEnd bool                    `json:"exitOnLeaseEnd"`
	Export         map[string]ExportDriver `json:"export"`
}

// ExporterConfigMetadata names the Exporter the config belongs to.
type ExporterConfigMetadata struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// ExporterConfigTLS is how the exporter trusts the Jumpstarter controller.
type ExporterConfigTLS struct {
	// CA is the base64-encoded PEM bundle.
	CA       string `json:"ca"`
	Insecure bool   `json:"insecure"`
}

// ExportDriver is one entry of the export map: a driver class with its config, or a ref.
type ExportDriver struct {
	Type   string          `json:"type,omitempty"`
	Ref    string          `json:"ref,omitempty"`
	Config json.RawMessage `json:"config,omitempty"`
}

// RenderExporterConfig returns the config.yaml of an exporter. Output is deterministic (map
// keys sorted), so comparing bytes tells whether the Secret needs an update.
func RenderExporterConfig(e *jumpstarterv1alpha1.Exporter, token string, caPEM []byte, recycle vtv1alpha1.RecycleStrategy, drivers []vtv1alpha1.DriverSpec) ([]byte, error) {
	j, err := exporterConfigJSON(e, token, caPEM, recycle, drivers)
	if err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(j)
}

// exporterConfigJSON is the config as JSON, which RenderExporterConfig converts to YAML.
func exporterConfigJSON(e *jumpstarterv1alpha1.Exporter, token string, caPEM []byte, recycle vtv1alpha1.RecycleStrategy, drivers []vtv1alpha1.DriverSpec) ([]byte, error) {
	cfg := ExporterConfig{
		APIVersion:     "jumpstarter.dev/v1alpha1",
		Kind:           "ExporterConfig",
		Metadata:       ExporterConfigMetadata{Namespace: e.Namespace, Name: e.Name},
		Endpoint:       e.Status.Endpoint,
		TLS:            ExporterConfigTLS{CA: base64.StdEncoding.EncodeToString(caPEM)},
		Token:          token,
		ExitOnLeaseEnd: recycle != vtv1alpha1.RecycleInPlaceReuse,
		Export:         make(map[string]ExportDriver, len(drivers)),
	}
	for _, d := range drivers {
		if _, dup := cfg.Export[d.Name]; dup {
			return nil, fmt.Errorf("driver %q is listed twice", d.Name)
		}
		x := ExportDriver{Type: d.Type, Ref: d.Ref}
		if d.Config != nil && len(bytes.TrimSpace(d.Config.Raw)) > 0 {
			x.Config = d.Config.Raw
		}
		cfg.Export[d.Name] = x
	}
	return json.Marshal(cfg)
}
