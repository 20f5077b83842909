package exporterset

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// TestDeletedSetLeavesNothing fills every store of a set's record through the reconciler's
// own entry points (expectations, failure memory, the pruned status, start-up samples, the
// metrics' bookkeeping and series), then deletes the set with the reconciler's one forget:
// nothing of it may be left, and nothing of another set may go. A store kept outside memory,
// or one forget left out, fails it.
func TestDeletedSetLeavesNothing(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := NewReconciler(nil, nil, nil, WithMetrics(reg))
	fill := func(name string) {
		key := "ns/" + name
		r.expectations.expectCreated(key, epoch, name+"-new")
		r.expectations.expectRetiring(key, epoch, name+"-old")
		crashing := instance(name+"-a", withProblem(&pool.Problem{Reason: vtv1alpha1.ReasonTargetCrashing, Replace: true}))
		observeFixtures(r.failureMemory, key, "v1", epoch, []*pool.Instance{crashing}, time.Second, time.Minute)
		// Upstream's CRD dropped surplusSince and instanceSequence from the write.
		set := &vtv1alpha1.ExporterSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
		r.pruned.noteWrite(set, vtv1alpha1.ExporterSetStatus{ObservedGeneration: 1, InstanceSequence: 4, SurplusSince: ptr.To(metav1.NewTime(epoch))})
		r.bookingLead(&pass{set: set, now: epoch, events: &passEvents{}}, &observation{Instances: []*pool.Instance{instance(name + "-b")}})
		ms := r.metricsOf(key)
		r.metrics.observeStatus("ns", name, ms, pool.Counts{Replicas: 1}, []*pool.Instance{instance(name+"-a", ready, leased("l"))}, nil, epoch)
		r.metrics.observeSLO("ns", name, ms, sloInput{now: epoch, instances: []*pool.Instance{instance(name+"-a", ready)}})
	}
	fill("gone")
	fill("kept")

	// Control: every store of the record holds the set, so the checks below can fail.
	stores := []string{"expectations", "failures", "instFailures", "pruned", "startup", "metrics"}
	held := StoresRemembering(r, "ns/gone")
	for _, s := range stores {
		if !held[s] {
			t.Fatalf("store %s holds nothing of the set before its deletion (holding: %v)", s, held)
		}
	}
	if metricSample(t, reg, "exporterset_replicas", map[string]string{"exporterset": "gone"}) == nil {
		t.Fatal("no series of the set before its deletion")
	}

	r.forget(types.NamespacedName{Namespace: "ns", Name: "gone"})

	if left := StoresRemembering(r, "ns/gone"); len(left) != 0 {
		t.Errorf("the deleted set is still remembered by %v", left)
	}
	if r.memory.size() == 0 || len(StoresRemembering(r, "ns/kept")) < len(stores) {
		t.Errorf("forgetting one set took another's: it is held by %v", StoresRemembering(r, "ns/kept"))
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "exporterset" && l.GetValue() == "gone" {
					t.Errorf("series %s of the deleted set is left", f.GetName())
				}
			}
		}
	}
}

// TestSetRecordSweepsGoneInstances: what the record keeps per instance (its failure record)
// goes at the first sweep that does not see the instance; the set's own part stays.
func TestSetRecordSweepsGoneInstances(t *testing.T) {
	r := NewReconciler(nil, nil, nil)
	crashing := instance("a", withProblem(&pool.Problem{Reason: vtv1alpha1.ReasonTargetCrashing, Replace: true}))
	observeFixtures(r.failureMemory, "ns/s", "v1", epoch, []*pool.Instance{crashing, instance("b")}, time.Second, time.Minute)
	if got := RememberedInstances(r, "ns/s"); len(got) != 2 {
		t.Fatalf("remembered instances %v, want a and b", got)
	}
	r.memory.sweep("ns/s", map[types.UID]bool{crashing.Exporter.UID: true}, r.memory.mark())
	if got := RememberedInstances(r, "ns/s"); len(got) != 1 || !got[crashing.Exporter.UID] {
		t.Errorf("after b went: remembered %v, want only a", got)
	}
	if b := observeFixtures(r.failureMemory, "ns/s", "v1", epoch, []*pool.Instance{crashing}, time.Second, time.Minute); b.Failures != 1 {
		t.Errorf("the sweep lost the set's failure count: %d, want 1", b.Failures)
	}
}
