package exportercfg

import (
	"encoding/json"
	"fmt"
	"sort"

	"sigs.k8s.io/yaml"
)

// Parse reads a config from YAML (or JSON). It fails only on syntax and on fields of the
// wrong type; Check judges the content.
func Parse(data []byte) (*Config, error) {
	var raw struct {
		Config
		Export map[string]json.RawMessage `json:"export"`
	}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("not a YAML ExporterConfig: %w", err)
	}
	cfg := raw.Config
	if raw.Export != nil {
		cfg.Export = make(map[string]Driver, len(raw.Export))
	}
	for name, entry := range raw.Export {
		d, err := parseDriver(entry)
		if err != nil {
			return nil, fmt.Errorf("export[%q]: %w", name, err)
		}
		cfg.Export[name] = d
	}
	return &cfg, nil
}

func parseDriver(entry json.RawMessage) (Driver, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(entry, &fields); err != nil {
		return Driver{}, fmt.Errorf("not a map of type/config or ref: %w", err)
	}
	var d Driver
	for k, v := range fields {
		d.fields = append(d.fields, k)
		var err error
		switch k {
		case "type":
			err = json.Unmarshal(v, &d.Type)
		case "ref":
			err = json.Unmarshal(v, &d.Ref)
		case "config":
			d.Config = v
		}
		if err != nil {
			return Driver{}, fmt.Errorf("%s: %w", k, err)
		}
	}
	sort.Strings(d.fields)
	return d, nil
}

// Load parses data and checks it: what an exporter does with its config file before it
// does anything else. The real-node tier's stand-in exporter and jumpsim's simulated one
// both exit with this error, so they fail alike.
func Load(data []byte) (*Config, error) {
	c, err := Parse(data)
	if err != nil {
		return nil, err
	}
	if err := c.Check(); err != nil {
		return nil, err
	}
	return c, nil
}
