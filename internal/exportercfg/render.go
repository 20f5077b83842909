package exportercfg

import (
	"bytes"
	"encoding/json"

	"sigs.k8s.io/yaml"
)

// wireDriver is an export entry as the file holds it.
type wireDriver struct {
	Type   string          `json:"type,omitempty"`
	Ref    string          `json:"ref,omitempty"`
	Config json.RawMessage `json:"config,omitempty"`
}

// Render returns the file as YAML. The output is deterministic (map keys sorted at every
// level, driver configs included), so comparing bytes tells whether a Secret holding an
// earlier rendering needs an update. The export map is always written (empty when there are
// no drivers), `hooks` only when a hook is set; a driver's Config is written as given, unless it is only white space.
func Render(c *Config) ([]byte, error) {
	w := struct {
		*Config
		Export map[string]wireDriver `json:"export"`
		Hooks  *Hooks                `json:"hooks,omitempty"`
	}{Config: c, Export: make(map[string]wireDriver, len(c.Export))}
	if !c.Hooks.Empty() {
		w.Hooks = c.Hooks
	}
	for name, d := range c.Export {
		x := wireDriver{Type: d.Type, Ref: d.Ref}
		if len(bytes.TrimSpace(d.Config)) > 0 {
			x.Config = d.Config
		}
		w.Export[name] = x
	}
	j, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	return yaml.JSONToYAML(j)
}
