package host_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/exporterset/exporterset/provisioner"
)

// A plugin's warnings (provisioner.WarningValidator) reach the host over the protocol: the
// registry's provisioner for a plugin is a WarningValidator, and it returns what the
// plugin's provisioner returned, or nothing.
func TestWarningsThroughPlugin(t *testing.T) {
	p := load(t, install(t, pluginDir(t), testPlugin, "ok"), fastOptions(t))
	wv, ok := p.Provisioner().(provisioner.WarningValidator)
	if !ok {
		t.Fatal("a plugin's provisioner is not a WarningValidator: its warnings would be dropped")
	}
	got, err := wv.Warnings(t.Context(), request(t, `{"warn": "driver type jumpstarter_driver_foo.Bar is unknown"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []provisioner.Warning{{Field: "parameters.warn", Message: "driver type jumpstarter_driver_foo.Bar is unknown"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if got, err := wv.Warnings(t.Context(), request(t, `{}`)); err != nil || got != nil {
		t.Errorf("no warning asked: %v, %v; want none", got, err)
	}
}
