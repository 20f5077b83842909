package provisionertest

import (
	"reflect"
	"strings"
	"testing"

	"github.com/exporterset/exporterset/provisioner"
)

// testWarnings checks a provisioner that reports warnings (provisioner.WarningValidator): on
// the valid request it succeeds, leaves the request alone, answers the same twice, and every
// warning has a message and a field rooted at parameters or spec, like field errors.
func (s *suite) testWarnings(t *testing.T) {
	w, ok := s.p.(provisioner.WarningValidator)
	if !ok {
		t.Skip("the provisioner does not implement provisioner.WarningValidator")
	}
	req := forValidate(s.mustRequest(t))
	before := snapshot(req)
	got, err := w.Warnings(s.ctx(t), req)
	if err != nil {
		t.Fatalf("Warnings of the valid request: %v", err)
	}
	if !reflect.DeepEqual(before, req) {
		t.Errorf("the request changed during Warnings (-before +after):\n%s", diff(before, req))
	}
	again, err := w.Warnings(s.ctx(t), req)
	if err != nil || !reflect.DeepEqual(got, again) {
		t.Errorf("Warnings is not deterministic: %v, then %v (%v)", got, again, err)
	}
	for _, warning := range got {
		if warning.Message == "" {
			t.Errorf("warning %q has no message", warning.String())
		}
		if f := warning.Field; f != "" && f != "parameters" && f != "spec" &&
			!strings.HasPrefix(f, "parameters.") && !strings.HasPrefix(f, "parameters[") && !strings.HasPrefix(f, "spec.") {
			t.Errorf("warning %q is not rooted at parameters or spec", warning.String())
		}
	}
}
