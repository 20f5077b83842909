package exporterset

import (
	"bytes"
	"encoding/json"
	"fmt"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/internal/exportercfg"
	"github.com/exporterset/exporterset/provisioner"
)

// hooksParameter is the key of the merged parameters that holds the exporter's lease hooks.
// It belongs to the exporter's config, not to any provisioner: newRequest takes it out
// before a provisioner (or a plugin, whose unknown-key checks would refuse it) sees them.
const hooksParameter = "hooks"

// newRequest is provisioner.NewRequest with parameters.hooks taken out, parsed and checked.
// Bad hooks are invalid parameters, named from `parameters` on
// (parameters.hooks.afterLease.onFailure), so they block the set like any bad parameter.
func newRequest(set *vtv1alpha1.ExporterSet, class *vtv1alpha1.VirtualTargetClass, defaults provisioner.Images) (*provisioner.Request, *exportercfg.Hooks, error) {
	req, err := provisioner.NewRequest(set, class, defaults)
	if err != nil {
		return nil, nil, err
	}
	rest, raw, err := takeKey(req.Parameters, hooksParameter)
	if err != nil {
		return nil, nil, provisioner.Invalid(fmt.Errorf("parameters: %w", err))
	}
	req.Parameters = rest
	if raw == nil {
		return req, nil, nil
	}
	hooks, err := exportercfg.ParseHooks(raw)
	if err == nil {
		err = hooks.Check()
	}
	if err != nil {
		return nil, nil, provisioner.Invalid(fmt.Errorf("parameters.%w", err))
	}
	if hooks.Empty() {
		return req, nil, nil
	}
	return req, hooks, nil
}

// withoutHooks takes parameters.hooks out of req's parameters, unchecked.
func withoutHooks(req *provisioner.Request) {
	if rest, _, err := takeKey(req.Parameters, hooksParameter); err == nil {
		req.Parameters = rest
	}
}

// takeKey returns params without key, and key's value (nil when absent or null). params are
// the merge package's canonical JSON; without the key they are returned as they are, so a
// set without hooks keeps its spec hash. With it, the rest is encoded the same way (compact,
// keys sorted, numbers and HTML as written).
func takeKey(params json.RawMessage, key string) (rest, value json.RawMessage, err error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(params, &m); err != nil {
		return nil, nil, err
	}
	v, ok := m[key]
	if !ok {
		return params, nil, nil
	}
	delete(m, key)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		return nil, nil, err
	}
	if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		v = nil
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), v, nil
}

// hooksJSON is the hooks as part of the spec hash and of an instance's config inputs: empty
// for none, so that a set without hooks hashes as it always did.
func hooksJSON(h *exportercfg.Hooks) string {
	if h.Empty() {
		return ""
	}
	b, err := json.Marshal(h)
	if err != nil {
		// Strings, ints and pointers to them cannot fail to marshal.
		panic(err)
	}
	return string(b)
}
