package provisionertest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// UnknownDriverKey is the config key the suite adds to an entry of each claimed driver type:
// no driver has it, and upstream's exporter refuses a key its driver class does not declare,
// so a provisioner that checks the type must refuse it too.
const UnknownDriverKey = "exportersetConformanceNoSuchKey"

// claimedDriverName names the entry the suite appends for a claimed type the valid drivers
// have none of.
const claimedDriverName = "conformance-claimed"

// testDrivers checks that Validate refuses, with a field path into the entry, a bad entry of
// every driver type the provisioner claims (Config.DriverTypes), and each Config.InvalidDrivers.
func (s *suite) testDrivers(t *testing.T) {
	if len(s.cfg.DriverTypes) == 0 && len(s.cfg.InvalidDrivers) == 0 {
		t.Skip("Config.DriverTypes claims no driver types and Config.InvalidDrivers lists no bad entries")
	}
	for _, typ := range s.cfg.DriverTypes {
		t.Run("unknown key in "+typ, func(t *testing.T) {
			req, set := s.requestWithSet(t)
			drivers := set.Spec.Template.Spec.Drivers
			i := slices.IndexFunc(drivers, func(d vtv1alpha1.DriverSpec) bool { return d.Type == typ })
			if i < 0 {
				drivers = append(drivers, vtv1alpha1.DriverSpec{Name: claimedDriverName, Type: typ})
				i = len(drivers) - 1
			}
			cfg := map[string]json.RawMessage{}
			if c := drivers[i].Config; c != nil && json.Unmarshal(c.Raw, &cfg) != nil {
				t.Fatalf("driver %q of the valid request has a config that is not an object: %s", drivers[i].Name, c.Raw)
			}
			if cfg == nil { // the config was null
				cfg = map[string]json.RawMessage{}
			}
			cfg[UnknownDriverKey] = json.RawMessage("true")
			raw, err := json.Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			drivers[i].Config = &apiextensionsv1.JSON{Raw: raw}
			set.Spec.Template.Spec.Drivers = drivers
			s.expectRejected(t, req, []string{fmt.Sprintf("spec.template.spec.drivers[%d].config.%s", i, UnknownDriverKey)})
		})
	}
	for _, c := range s.cfg.InvalidDrivers {
		t.Run(c.Name, func(t *testing.T) {
			req, set := s.requestWithSet(t)
			set.Spec.Template.Spec.Drivers = cloneDrivers(c.Drivers)
			s.expectRejected(t, req, c.Fields)
		})
	}
}

// requestWithSet returns a valid request for Validate whose ExporterSet is a copy the caller
// may change.
func (s *suite) requestWithSet(t *testing.T) (*provisioner.Request, *vtv1alpha1.ExporterSet) {
	t.Helper()
	req := forValidate(s.mustRequest(t))
	if req.Set == nil {
		t.Fatal("the valid request has no ExporterSet to put driver entries in")
	}
	req.Set = req.Set.DeepCopy()
	return req, req.Set
}

// expectRejected asserts that Validate refuses req as invalid input, with field errors rooted
// at parameters or spec that name every path in fields, and the same error every time.
func (s *suite) expectRejected(t *testing.T, req *provisioner.Request, fields []string) {
	t.Helper()
	err := s.p.Validate(s.ctx(t), req)
	if err == nil {
		t.Fatalf("Validate accepted parameters %s with drivers %s", req.Parameters, driversJSON(req))
	}
	if !provisioner.IsInvalid(err) {
		t.Fatalf("Validate's error is %s, want %s: %v", provisioner.CodeOf(err), provisioner.CodeInvalid, err)
	}
	var pe *provisioner.Error
	if !errors.As(err, &pe) {
		t.Fatalf("Validate's error is not a *provisioner.Error: %v", err)
	}
	var got []string
	for _, fe := range pe.Fields {
		got = append(got, fe.Field)
		if fe.Field != "parameters" && !strings.HasPrefix(fe.Field, "parameters.") && !strings.HasPrefix(fe.Field, "parameters[") &&
			fe.Field != "spec" && !strings.HasPrefix(fe.Field, "spec.") {
			t.Errorf("field error %q is not rooted at parameters or spec", fe.Error())
		}
	}
	for _, want := range fields {
		if !slices.Contains(got, want) {
			t.Errorf("Validate's error names fields %q, want %q among them: %v", got, want, err)
		}
	}
	if err.Error() == "" {
		t.Error("Validate's error has an empty message")
	}
	// The same input gives the same error: people compare conditions across reconciles.
	again := s.p.Validate(s.ctx(t), req)
	if again == nil || again.Error() != err.Error() {
		t.Errorf("Validate is not deterministic: %v, then %v", err, again)
	}
}

// driversJSON writes the request's drivers for a failure message.
func driversJSON(req *provisioner.Request) string {
	b, err := json.Marshal(provisioner.TemplateDrivers(req))
	if err != nil {
		return fmt.Sprint(provisioner.TemplateDrivers(req))
	}
	return string(b)
}
