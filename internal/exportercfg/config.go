package exportercfg

import (
	"encoding/json"
	"sort"
)

// The file's type, as the controller writes it.
const (
	APIVersion = "jumpstarter.dev/v1alpha1"
	Kind       = "ExporterConfig"
)

// Config is an ExporterConfig file. [Render] writes it and [Parse] reads it; encoding/json
// alone drops the export map (it has its own form, see [Driver]).
type Config struct {
	APIVersion     string   `json:"apiVersion"`
	Kind           string   `json:"kind"`
	Metadata       Metadata `json:"metadata"`
	Endpoint       string   `json:"endpoint"`
	TLS            TLS      `json:"tls"`
	Token          string   `json:"token"`
	ExitOnLeaseEnd bool     `json:"exitOnLeaseEnd"`
	// Export maps a driver name to its entry: filled by Parse from the file's export map
	// (each entry checked by Check), written by Render (a nil map as an empty one).
	Export map[string]Driver `json:"-"`
	// Hooks are the lease hooks; nil (or none set) writes no `hooks`.
	Hooks *Hooks `json:"hooks,omitempty"`
}

// Metadata names the Exporter the config belongs to.
type Metadata struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// TLS is how the exporter trusts its controller: CA is a base64-encoded PEM bundle.
type TLS struct {
	CA       string `json:"ca"`
	Insecure bool   `json:"insecure"`
}

// Driver is one entry of the export map: a driver class with its config, or a ref to a
// nested driver.
type Driver struct {
	Type string
	// Config is the driver's configuration as JSON; empty (or only white space) means none.
	Config json.RawMessage
	Ref    string
	// fields are the keys the entry was written with (set by Parse), so that Check can tell
	// `type: ''` from no type and name a stray key. An entry built in code has none: its
	// non-empty values are its keys.
	fields []string
}

// DriverNames returns the names of the exported drivers, sorted.
func (c *Config) DriverNames() []string {
	out := make([]string, 0, len(c.Export))
	for name := range c.Export {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}
