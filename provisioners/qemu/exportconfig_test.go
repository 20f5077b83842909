package qemu

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// checkExportConfig checks rendered drivers (the exporter config's export map) against the
// field reference in driverfields.go, more strictly than Validate checks input: what the
// exporter gets must have every key a known driver declares and nothing else, of the right
// type and format, no null where the driver cannot take one (EnrichDrivers has filled those
// in by now), and refs that resolve.
func checkExportConfig(drivers []vtv1alpha1.DriverSpec) field.ErrorList {
	path := field.NewPath("export")
	var errs field.ErrorList
	configs := make([]map[string]any, len(drivers))
	for i, d := range drivers {
		spec := lookupDriver(d.Type)
		if d.Ref != "" || spec == nil {
			continue
		}
		cfg, ferr := decodeConfig(path.Index(i).Child("config"), d)
		if ferr != nil {
			errs = append(errs, ferr)
			continue
		}
		configs[i] = cfg
		errs = append(errs, checkObject(path.Index(i).Child("config"), cfg, spec.config)...)
		for _, f := range spec.config.fields {
			// checkObject lets null through only where EnrichDrivers fills the key.
			if v, ok := cfg[f.name]; ok && v == nil && f.filled && !f.nullable {
				errs = append(errs, field.Invalid(path.Index(i).Child("config", f.name), nil, "rendered null, which the driver cannot take"))
			}
		}
	}
	return append(errs, checkRefs(drivers, configs)...)
}

// TestExportConfigMatchesDriverFields renders the exporter's drivers for every golden input
// and for valid configs that use every field, and checks them against the field reference;
// the mistakes of driverMistakes must be refused by Validate before anything renders.
func TestExportConfigMatchesDriverFields(t *testing.T) {
	ctx := context.Background()
	p := New()
	for _, c := range loadCases(t) {
		t.Run("golden/"+c.Name, func(t *testing.T) {
			got := render(t, p, c).Drivers
			if len(got) == 0 {
				t.Fatal("no drivers rendered: nothing to check")
			}
			for _, e := range checkExportConfig(got) {
				t.Errorf("rendered %v", e)
			}
		})
	}
	for _, tc := range []struct {
		name    string
		drivers []vtv1alpha1.DriverSpec
	}{
		{"nulls the provisioner fills", []vtv1alpha1.DriverSpec{qemuDriver(`{"arch":null,"smp":null,"mem":null,"hostfwd":null,"launcher_socket":null}`)}},
		{"own forwards and network drivers", []vtv1alpha1.DriverSpec{
			qemuDriver(`{"hostfwd":{"shell":{"hostport":3022,"guestport":22},"web":{"protocol":"tcp","hostport":8080,"guestport":80}}}`),
			driver("sock", UnixNetworkDriverType, `{"path":"/shared/x.sock"}`), ref("site", "qemu.web")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := p.EnrichDrivers(ctx, baseRequest(`{"resources":{"storage":"20Gi"}}`, tc.drivers...))
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range checkExportConfig(got) {
				t.Errorf("rendered %v", e)
			}
		})
	}
	for _, m := range driverMistakes {
		t.Run("mistake/"+m.name, func(t *testing.T) {
			req := baseRequest(``, m.drivers...)
			if err := p.Validate(ctx, req); err == nil {
				t.Fatal("Validate accepted it")
			}
			if got, err := p.EnrichDrivers(ctx, req); err == nil || got != nil {
				t.Errorf("EnrichDrivers rendered %v (error %v)", driverLines(got), err)
			}
			// The reference itself sees the mistake: a check that missed it would let it
			// through to the exporter.
			if len(checkExportConfig(m.drivers)) == 0 && len(checkTypes(m.drivers)) == 0 {
				t.Error("the field reference does not see the mistake")
			}
		})
	}
}

// TestExportConfigCheckCanFail feeds the reference check a rendered config with a stray
// key, a null and a bad size: it must report each, or the test above proves nothing.
func TestExportConfigCheckCanFail(t *testing.T) {
	bad := []vtv1alpha1.DriverSpec{qemuDriver(`{"memory":"2G","mem":null,"hostname":null,"disk_size":"2Gi","smp":2}`)}
	got := checkExportConfig(bad)
	var fields []string
	for _, e := range got {
		fields = append(fields, e.Field)
	}
	want := []string{"export[0].config.memory", "export[0].config.disk_size", "export[0].config.hostname", "export[0].config.mem"}
	if len(fields) != len(want) {
		t.Fatalf("reported %v, want %v", fields, want)
	}
	for i := range want {
		if fields[i] != want[i] {
			t.Errorf("reported %v, want %v", fields, want)
		}
	}
}
