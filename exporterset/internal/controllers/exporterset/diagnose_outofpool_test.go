package exporterset

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/internal/state"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// An instance renewed instead of quarantined (it was the last enabled Exporter) and then
// quarantined after all (a successor came) has no problem: the status's failingReplicas and
// the conditions' failures must count the same instances, or a pool with none available says
// Available=True while its status counts one failing (the soak sweep found it).
func TestRenewedThenQuarantinedHasNoProblem(t *testing.T) {
	r := newTestReconciler()
	set := &vtv1alpha1.ExporterSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "set", UID: "uid-set"}}
	in := fixture.Instance("a", fixture.Ready, fixture.Quarantined(time.Second))
	in.Pods[0].UID = types.UID("pod-a")
	other := fixture.Instance("b", fixture.Ready)
	other.Pods[0].UID = types.UID("pod-b")
	for _, i := range []*pool.Instance{in, other} {
		f := r.memory.instFailures.InstanceOrPut(keyOf(set), i.Exporter.UID, func() *instanceFailures { return &instanceFailures{} })
		f.renewPod = i.Pods[0].UID // both renewed once; only b is still in the pool
	}
	p := &pass{set: set, now: fixture.Epoch.Add(time.Minute), events: &eventlog.Batch{}, requeue: &state.Soonest{}}
	h := r.diagnose(p, &observation{Instances: []*pool.Instance{in, other}}, externalStates{}, nil)
	if pr := h.problems.Of(in); pr != nil {
		t.Errorf("the quarantined instance has a problem: %+v", pr)
	}
	if pr := h.problems.Of(other); pr == nil || pr.Reason != vtv1alpha1.ReasonReuseCheckFailing {
		t.Errorf("the renewed instance in the pool: problem %+v, want ReuseCheckFailing (the test would prove nothing)", pr)
	}
	if c := pool.ComputeStatus([]*pool.Instance{in, other}, h.problems); int(c.FailingReplicas) != h.failures.Failing {
		t.Errorf("failingReplicas %d, failures counted by the conditions %d", c.FailingReplicas, h.failures.Failing)
	}
	// The conditions word the failure as what it is, not as a missed startup deadline.
	if msg := h.failures.message(); !strings.Contains(msg, "1 of 1 instances failed their check between leases") {
		t.Errorf("failure summary %q", msg)
	}
}
