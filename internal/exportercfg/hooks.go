package exportercfg

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

// OnFailure is what an exporter does when a hook fails (exits non-zero, times out or cannot
// start): the values upstream's exporter reads.
type OnFailure string

// The onFailure values. The empty value means the default, [OnFailureWarn].
const (
	// OnFailureWarn carries on: the exporter reports the failure in its status message.
	OnFailureWarn OnFailure = "warn"
	// OnFailureEndLease ends the lease; the exporter then takes new leases.
	OnFailureEndLease OnFailure = "endLease"
	// OnFailureExit ends the lease, takes the exporter offline and exits with code 1.
	OnFailureExit OnFailure = "exit"
)

// DefaultHookTimeout is the timeout of a hook that names none, in seconds (upstream's).
const DefaultHookTimeout = 120

// Hooks are the exporter's lease hooks, the config file's `hooks`: run before a lease's
// commands are accepted and after the lease ends.
type Hooks struct {
	BeforeLease *Hook `json:"beforeLease,omitempty"`
	AfterLease  *Hook `json:"afterLease,omitempty"`
	// fields are the keys as written (set when parsed), so that Check can name a stray one.
	fields []string
}

// Hook is one lease hook.
type Hook struct {
	// Exec is the interpreter; empty means upstream's default (see the runner).
	Exec string `json:"exec,omitempty"`
	// Script is an inline script, or the path of a script file on the exporter.
	Script string `json:"script"`
	// Timeout is in seconds; nil means [DefaultHookTimeout].
	Timeout *int `json:"timeout,omitempty"`
	// OnFailure is empty for the default, warn.
	OnFailure OnFailure `json:"onFailure,omitempty"`
	fields    []string
}

// Empty is true when no hook is set, so the file needs no `hooks`.
func (h *Hooks) Empty() bool { return h == nil || (h.BeforeLease == nil && h.AfterLease == nil) }

// TimeoutSeconds is the hook's timeout with the default applied.
func (h *Hook) TimeoutSeconds() int {
	if h.Timeout == nil {
		return DefaultHookTimeout
	}
	return *h.Timeout
}

// Action is the hook's onFailure with the default applied.
func (h *Hook) Action() OnFailure {
	if h.OnFailure == "" {
		return OnFailureWarn
	}
	return h.OnFailure
}

// ParseHooks reads a `hooks` map from JSON, as a class's parameters hold it. It fails on
// syntax and on values of the wrong type, naming the field; Check judges the rest.
func ParseHooks(data []byte) (*Hooks, error) {
	var h Hooks
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// UnmarshalJSON reads the map and keeps its keys.
func (h *Hooks) UnmarshalJSON(data []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("hooks: not a map of beforeLease and afterLease")
	}
	*h = Hooks{}
	for k, v := range raw {
		h.fields = append(h.fields, k)
		var dst **Hook
		switch k {
		case "beforeLease":
			dst = &h.BeforeLease
		case "afterLease":
			dst = &h.AfterLease
		default:
			continue
		}
		if isNull(v) {
			continue
		}
		var hook Hook
		if err := hook.unmarshal(v, "hooks."+k); err != nil {
			return err
		}
		*dst = &hook
	}
	sort.Strings(h.fields)
	return nil
}

func (h *Hook) unmarshal(data []byte, path string) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("%s: not a map of exec, script, timeout and onFailure", path)
	}
	for k, v := range raw {
		h.fields = append(h.fields, k)
		var err error
		switch k {
		case "exec":
			err = json.Unmarshal(v, &h.Exec)
		case "script":
			err = json.Unmarshal(v, &h.Script)
		case "onFailure":
			err = json.Unmarshal(v, &h.OnFailure)
		case "timeout":
			h.Timeout, err = wholeSeconds(v)
		}
		if err != nil {
			return fmt.Errorf("%s.%s: %w", path, k, err)
		}
	}
	sort.Strings(h.fields)
	return nil
}

// wholeSeconds reads an integer (upstream's field is an int); null means the default.
func wholeSeconds(v json.RawMessage) (*int, error) {
	if isNull(v) {
		return nil, nil
	}
	var n json.Number
	d := json.NewDecoder(bytes.NewReader(v))
	d.UseNumber()
	if err := d.Decode(&n); err != nil {
		return nil, fmt.Errorf("%s is not a number of seconds", v)
	}
	// Like upstream's int field, 30.0 is 30 but 30.5 is refused.
	f, err := n.Float64()
	if err != nil || f != math.Trunc(f) || math.Abs(f) > math.MaxInt32 {
		return nil, fmt.Errorf("%s is not a whole number of seconds", v)
	}
	s := int(f)
	return &s, nil
}

func isNull(v json.RawMessage) bool { return string(bytes.TrimSpace(v)) == "null" }

// Check reports the first thing wrong with the hooks, naming the field from `hooks` on
// (hooks.afterLease.onFailure), or nil: an unknown field, a missing script, a non-positive
// timeout or an onFailure upstream does not know.
func (h *Hooks) Check() error {
	if h == nil {
		return nil
	}
	for _, f := range h.fields {
		if f != "beforeLease" && f != "afterLease" {
			return fmt.Errorf("hooks: unknown field %q (want beforeLease, afterLease)", f)
		}
	}
	for _, x := range []struct {
		name string
		hook *Hook
	}{{"beforeLease", h.BeforeLease}, {"afterLease", h.AfterLease}} {
		if x.hook == nil {
			continue
		}
		if err := x.hook.check("hooks." + x.name); err != nil {
			return err
		}
	}
	return nil
}

// checkAsExporter refuses what upstream's exporter refuses to start with: a hook without a
// script, an onFailure it does not know. It ignores unknown fields and takes any timeout, as
// upstream's does, so that the simulated and stand-in exporters start (or not) where a real
// one would; the controller never writes such hooks ([Hooks.Check]).
func (h *Hooks) checkAsExporter() error {
	if h == nil {
		return nil
	}
	for _, x := range []struct {
		name string
		hook *Hook
	}{{"beforeLease", h.BeforeLease}, {"afterLease", h.AfterLease}} {
		if x.hook == nil {
			continue
		}
		relaxed := *x.hook
		relaxed.fields, relaxed.Timeout = nil, nil
		for _, f := range x.hook.fields {
			if f == "script" {
				relaxed.fields = append(relaxed.fields, f)
			}
		}
		if err := relaxed.check("hooks." + x.name); err != nil {
			return err
		}
	}
	return nil
}

func (h *Hook) check(path string) error {
	for _, f := range h.fields {
		switch f {
		case "exec", "script", "timeout", "onFailure":
		default:
			return fmt.Errorf("%s: unknown field %q (want exec, script, timeout, onFailure)", path, f)
		}
	}
	hasScript := h.Script != ""
	for _, f := range h.fields {
		hasScript = hasScript || f == "script"
	}
	switch {
	case !hasScript:
		return fmt.Errorf("%s.script is missing: a hook needs a script", path)
	case h.Timeout != nil && *h.Timeout <= 0:
		return fmt.Errorf("%s.timeout is %d: want a positive number of seconds", path, *h.Timeout)
	}
	switch h.OnFailure {
	case "", OnFailureWarn, OnFailureEndLease, OnFailureExit:
	default:
		return fmt.Errorf("%s.onFailure is %q: want %s", path, h.OnFailure,
			strings.Join([]string{string(OnFailureWarn), string(OnFailureEndLease), string(OnFailureExit)}, ", "))
	}
	return nil
}
