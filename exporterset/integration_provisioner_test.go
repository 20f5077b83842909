package exporterset_test

import (
	"errors"
	"testing"
	"time"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/provisioner"
)

// A provisioner that fails transiently (a crashed plugin) blocks the set with a condition and
// retries; nothing is deleted because of it, and the set recovers when the provisioner does.
func TestTransientProvisionerFailureDeletesNothing(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	set := w.set("pool", 2, 4, 2)
	w.waitStatus("pool", 30*time.Second, "2 available", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas == 2 })
	before := len(w.exporters("pool"))

	w.fake.Fail("Validate", provisioner.Transient(errors.New("plugin process exited")))
	w.edit(set, func() { set.Spec.MinReplicas, set.Spec.MinAvailableReplicas = 0, 0 })
	st := w.waitStatus("pool", 20*time.Second, "ProvisionerError", func(s vtv1alpha1.ExporterSetStatus) bool {
		r, _ := degraded(s)
		return r == vtv1alpha1.ReasonProvisionerError
	})
	time.Sleep(2 * time.Second) // the cooldown is 1s: a scale-down would have happened
	if n := len(w.exporters("pool")); n != before {
		t.Fatalf("instances changed while the provisioner failed: %d -> %d (%s)", before, n, summary(st))
	}
	calls := w.fake.Calls("Validate")
	time.Sleep(2 * time.Second)
	if w.fake.Calls("Validate") <= calls {
		t.Fatalf("a transient failure is not retried")
	}
	if n := w.eventCount("pool", string(exporterset.EventProvisionerError)); n != 1 {
		t.Errorf("%d ProvisionerError events for one problem retried %d times, want 1", n, w.fake.Calls("Validate")-calls)
	}

	w.fake.Fail("Validate", nil)
	w.waitStatus("pool", 30*time.Second, "recovered and scaled down to its standby", func(s vtv1alpha1.ExporterSetStatus) bool {
		r, _ := degraded(s)
		return r == "" && atRest(s)
	})
}
