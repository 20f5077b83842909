package exporterset

import (
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/internal/metrics"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// TestDeletedSetLeavesNothing fills every store of a set's record through the reconciler's
// own entry points (expectations, failure memory, the pruned status, start-up samples, the
// metrics' bookkeeping and series), then deletes the set with the reconciler's one forget:
// nothing of it may be left, and nothing of another set may go. A store kept outside memory,
// or one forget left out, fails it.
func TestDeletedSetLeavesNothing(t *testing.T) {
	reg := prometheus.NewRegistry()
	r := newTestReconciler(withMetrics(reg))
	fill := func(name string) {
		key := "ns/" + name
		r.expectations.expectCreated(key, fixture.Epoch, name+"-new")
		r.expectations.expectRetiring(key, fixture.Epoch, name+"-old")
		crashing := fixture.Instance(name+"-a", fixture.WithProblem(&pool.Problem{Reason: vtv1alpha1.ReasonTargetCrashing, Replace: true}))
		observeFixtures(r.failureMemory, key, "v1", fixture.Epoch, []*pool.Instance{crashing}, time.Second, time.Minute)
		// Upstream's CRD dropped surplusSince and instanceSequence from the write.
		set := &vtv1alpha1.ExporterSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
		r.pruned.noteWrite(set, vtv1alpha1.ExporterSetStatus{ObservedGeneration: 1, InstanceSequence: 4, SurplusSince: ptr.To(metav1.NewTime(fixture.Epoch))})
		r.bookingLead(&pass{set: set, now: fixture.Epoch, events: &eventlog.Batch{}}, &observation{Instances: []*pool.Instance{fixture.Instance(name + "-b")}})
		ms := r.metricsOf(key)
		r.Metrics.ObserveStatus("ns", name, ms, pool.Counts{Replicas: 1}, []*pool.Instance{fixture.Instance(name+"-a", fixture.Ready, fixture.Leased("l"))}, nil, fixture.Epoch)
		r.Metrics.ObserveSLO("ns", name, ms, metrics.SLOInput{Now: fixture.Epoch, Instances: []*pool.Instance{fixture.Instance(name+"-a", fixture.Ready)}})
	}
	fill("gone")
	fill("kept")

	// Control: every store of the record holds the set, so the checks below can fail.
	stores := []string{"expectations", "failures", "instFailures", "pruned", "startup", "metrics"}
	held := r.memory.Holding("ns/gone")
	for _, s := range stores {
		if !held[s] {
			t.Fatalf("store %s holds nothing of the set before its deletion (holding: %v)", s, held)
		}
	}
	if !slices.Contains(seriesOf(t, reg, "gone"), "exporterset_replicas") {
		t.Fatalf("no exporterset_replicas series of the set before its deletion (series: %v)", seriesOf(t, reg, "gone"))
	}

	r.forget(types.NamespacedName{Namespace: "ns", Name: "gone"})

	if left := r.memory.Holding("ns/gone"); len(left) != 0 {
		t.Errorf("the deleted set is still remembered by %v", left)
	}
	if r.memory.Size() == 0 || len(r.memory.Holding("ns/kept")) < len(stores) {
		t.Errorf("forgetting one set took another's: it is held by %v", r.memory.Holding("ns/kept"))
	}
	if left := seriesOf(t, reg, "gone"); len(left) != 0 {
		t.Errorf("series %v of the deleted set are left", left)
	}
}

// TestSetRecordSweepsGoneInstances: what the record keeps per instance (its failure record)
// goes at the first sweep that does not see the instance; the set's own part stays.
func TestSetRecordSweepsGoneInstances(t *testing.T) {
	r := newTestReconciler()
	crashing := fixture.Instance("a", fixture.WithProblem(&pool.Problem{Reason: vtv1alpha1.ReasonTargetCrashing, Replace: true}))
	observeFixtures(r.failureMemory, "ns/s", "v1", fixture.Epoch, []*pool.Instance{crashing, fixture.Instance("b")}, time.Second, time.Minute)
	if got := r.memory.Instances("ns/s"); len(got) != 2 {
		t.Fatalf("remembered instances %v, want a and b", got)
	}
	r.memory.Sweep("ns/s", map[types.UID]bool{crashing.Exporter.UID: true}, r.memory.Mark())
	if got := r.memory.Instances("ns/s"); len(got) != 1 || !got[crashing.Exporter.UID] {
		t.Errorf("after b went: remembered %v, want only a", got)
	}
	if b := observeFixtures(r.failureMemory, "ns/s", "v1", fixture.Epoch, []*pool.Instance{crashing}, time.Second, time.Minute); b.Failures != 1 {
		t.Errorf("the sweep lost the set's failure count: %d, want 1", b.Failures)
	}
}

// seriesOf names the metric families with a series of the set named set.
func seriesOf(t *testing.T, reg *prometheus.Registry, set string) (out []string) {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "exporterset" && l.GetValue() == set && !slices.Contains(out, f.GetName()) {
					out = append(out, f.GetName())
				}
			}
		}
	}
	return out
}
