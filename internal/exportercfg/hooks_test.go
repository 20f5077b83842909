package exportercfg

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ptr[T any](v T) *T { return &v }

const goodHooks = `
hooks:
  beforeLease:
    script: j power on
    timeout: 30
    onFailure: endLease
  afterLease:
    exec: /bin/bash
    script: |
      j storage flash image.raw
    onFailure: exit
`

func TestParseHooks(t *testing.T) {
	cfg, err := Load([]byte(good + goodHooks))
	if err != nil {
		t.Fatal(err)
	}
	want := &Hooks{
		BeforeLease: &Hook{Script: "j power on", Timeout: ptr(30), OnFailure: OnFailureEndLease},
		AfterLease:  &Hook{Exec: "/bin/bash", Script: "j storage flash image.raw\n", OnFailure: OnFailureExit},
	}
	if diff := cmp.Diff(want, cfg.Hooks, sameConfig); diff != "" {
		t.Errorf("hooks (-want +got):\n%s", diff)
	}
	if b, a := cfg.Hooks.BeforeLease, cfg.Hooks.AfterLease; b.TimeoutSeconds() != 30 || a.TimeoutSeconds() != DefaultHookTimeout || a.Action() != OnFailureExit {
		t.Errorf("timeouts %d, %d; after's action %s", b.TimeoutSeconds(), a.TimeoutSeconds(), a.Action())
	}
	if (&Hook{Script: "x"}).Action() != OnFailureWarn {
		t.Error("the default onFailure is not warn")
	}
	// The file holds them as written, and only when there are some.
	y, err := Render(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"hooks:\n", "  afterLease:\n    exec: /bin/bash\n    onFailure: exit\n", "    timeout: 30\n"} {
		if !strings.Contains(string(y), s) {
			t.Errorf("rendered\n%s\nwant it to hold %q", y, s)
		}
	}
	for _, h := range []*Hooks{nil, {}} {
		cfg.Hooks = h
		if y, _ := Render(cfg); strings.Contains(string(y), "hooks") {
			t.Errorf("hooks %v rendered as\n%s", h, y)
		}
	}
}

func TestCheckBadHooks(t *testing.T) {
	for _, tc := range []struct{ name, hooks, want string }{
		{"stray hook", "{beforeLeases: {script: x}}", `hooks: unknown field "beforeLeases" (want beforeLease, afterLease)`},
		{"stray field", "{afterLease: {script: x, retries: 2}}", `hooks.afterLease: unknown field "retries" (want exec, script, timeout, onFailure)`},
		{"snake case", "{afterLease: {script: x, on_failure: exit}}", `hooks.afterLease: unknown field "on_failure" (want exec, script, timeout, onFailure)`},
		{"no script", "{beforeLease: {timeout: 5}}", "hooks.beforeLease.script is missing: a hook needs a script"},
		{"zero timeout", "{afterLease: {script: x, timeout: 0}}", "hooks.afterLease.timeout is 0: want a positive number of seconds"},
		{"negative timeout", "{beforeLease: {script: x, timeout: -3}}", "hooks.beforeLease.timeout is -3: want a positive number of seconds"},
		{"bad onFailure", "{afterLease: {script: x, onFailure: retry}}", `hooks.afterLease.onFailure is "retry": want warn, endLease, exit`},
		{"onFailure case", "{afterLease: {script: x, onFailure: EndLease}}", `hooks.afterLease.onFailure is "EndLease": want warn, endLease, exit`},
		{"good", "{beforeLease: {script: '', timeout: 1.0, onFailure: warn}, afterLease: null}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(good + "hooks: " + tc.hooks + "\n"))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got := fmtErr(cfg.Hooks.Check()); got != tc.want {
				t.Errorf("Check = %q\nwant    %q", got, tc.want)
			}
		})
	}
}

// An exporter starts with what upstream's starts with: unknown fields and any timeout are
// the controller's to refuse, a missing script and an unknown onFailure are refused by both.
func TestLoadHooksAsUpstream(t *testing.T) {
	for _, tc := range []struct{ hooks, want string }{
		{"{beforeLeases: {script: x}, afterLease: {script: x, retries: 2, timeout: 0}}", ""},
		{"{afterLease: {script: x, timeout: -1}}", ""},
		{"{beforeLease: {timeout: 5}}", "hooks.beforeLease.script is missing: a hook needs a script"},
		{"{afterLease: {script: x, onFailure: retry}}", `hooks.afterLease.onFailure is "retry": want warn, endLease, exit`},
	} {
		_, err := Load([]byte(good + "hooks: " + tc.hooks + "\n"))
		if got := fmtErr(err); got != tc.want {
			t.Errorf("Load with hooks %s = %q, want %q", tc.hooks, got, tc.want)
		}
	}
}

// Values of the wrong type fail to parse, naming the field.
func TestParseHooksErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"afterLease": {"script": "x", "timeout": "soon"}}`, `hooks.afterLease.timeout: "soon" is not a number of seconds`},
		{`{"afterLease": {"script": "x", "timeout": 2.5}}`, `hooks.afterLease.timeout: 2.5 is not a whole number of seconds`},
		{`{"beforeLease": {"script": ["x"]}}`, `hooks.beforeLease.script: json: cannot unmarshal array into Go value of type string`},
		{`{"beforeLease": "x"}`, `hooks.beforeLease: not a map of exec, script, timeout and onFailure`},
		{`[1]`, `hooks: not a map of beforeLease and afterLease`},
	} {
		_, err := ParseHooks([]byte(tc.in))
		if got := fmtErr(err); got != tc.want {
			t.Errorf("ParseHooks(%s) = %q\nwant %q", tc.in, got, tc.want)
		}
	}
	if _, err := Parse([]byte(good + "hooks: {afterLease: {script: x, timeout: soon}}\n")); err == nil || !strings.Contains(err.Error(), "hooks.afterLease.timeout") {
		t.Errorf("Parse of a config with a bad timeout = %v", err)
	}
}
