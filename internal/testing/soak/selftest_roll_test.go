package soak

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	expool "github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/internal/testing/fakeprov"
)

// rollSet creates a class and a set with a warm buffer of one, as the walk's pools are.
func (b *bench) rollSet(name string, maxR int32) *vtv1alpha1.ExporterSet {
	p := &pool{set: name, class: name, provisioner: fakeprov.Name, recycle: vtv1alpha1.RecycleExitAndReplace, max: maxR, minAvail: 1}
	b.create(newClass(b.ns, p))
	s := newSet(b.ns, p)
	b.create(s)
	return s
}

// instance creates an Exporter of set built from spec hash, as the reconciler would, and
// makes it ready (Online and Registered, as the Jumpstarter controller would) if asked.
func (b *bench) instance(name string, set *vtv1alpha1.ExporterSet, hash string, ready bool) *jumpstarterv1alpha1.Exporter {
	b.t.Helper()
	e := b.exporter(name, set, "")
	b.patch(e, func(e *jumpstarterv1alpha1.Exporter) { e.Labels[expool.LabelSpecHash] = hash })
	if ready {
		b.ready(e)
	}
	return e
}

// ready sets the Exporter's Online and Registered conditions.
func (b *bench) ready(e *jumpstarterv1alpha1.Exporter) {
	b.t.Helper()
	now := metav1.Now()
	e.Status.Conditions = []metav1.Condition{
		{Type: jumpstarterv1alpha1.ExporterConditionOnline, Status: metav1.ConditionTrue, Reason: "Seen", Message: "soak self-test", LastTransitionTime: now},
		{Type: jumpstarterv1alpha1.ExporterConditionRegistered, Status: metav1.ConditionTrue, Reason: "Registered", Message: "soak self-test", LastTransitionTime: now},
	}
	if err := b.c.Status().Update(b.ctx, e); err != nil {
		b.t.Fatal(err)
	}
}

// retire does what the reconciler's retire patch does: the annotation and spec.enabled=false.
func (b *bench) retire(e *jumpstarterv1alpha1.Exporter) {
	b.patch(e, func(e *jumpstarterv1alpha1.Exporter) {
		e.Annotations = map[string]string{expool.AnnotationRetiring: time.Now().UTC().Format(time.RFC3339)}
		e.Spec.Enabled = ptr.To(false)
	})
}

// startRoll tells the checker, as the walk does, that set's spec hash changed, once the
// checker's cache has seen the instances of the old spec (their hash is then outdated), and
// waits until a retirement's annotation (to the second) comes from a pass after the edit.
func (b *bench) startRoll(set string, want int) {
	b.t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		start := time.Now()
		if old := b.checker.RollStarted(set, RollByAction, start, start, 0); len(old) >= want {
			time.Sleep(rollSkew + time.Second)
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("the checker never saw the old spec hash of set %s", set)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestCheckerDetectsRollBelowFloor: the controller (played by hand) retires the last
// available outdated instance while the new one is not available: the warm pool is
// emptied by the roll, which the roll floor must report. Retiring an outdated instance
// once a new one is available, or at a full ceiling one at a time, is no violation.
func TestCheckerDetectsRollBelowFloor(t *testing.T) {
	b := newBench(t)

	// The violation: minAvailableReplicas 1, one available instance of the old spec, its
	// replacement of the new spec not ready yet, room under the ceiling.
	bad := b.rollSet("emptied", 3)
	old := b.instance("emptied-1", bad, "old", true)
	b.startRoll("emptied", 1)
	b.seen(b.instance("emptied-2", bad, "new", false)) // before the retirement
	b.retire(old)
	b.expect(InvRollFloor, "emptied")

	// The surge: the new instance is available first, then the old one goes.
	good := b.rollSet("surged", 3)
	old2 := b.instance("surged-1", good, "old", true)
	b.startRoll("surged", 1)
	b.seen(b.instance("surged-2", good, "new", true))
	b.retire(old2)

	// The ceiling: maxReplicas 1 leaves no room to surge, so the one instance goes first.
	full := b.rollSet("full", 1)
	old3 := b.instance("full-1", full, "old", true)
	b.startRoll("full", 1)
	b.retire(old3)

	// Each retirement is judged rollSkew after the checker saw it: wait for the three
	// judgments, however late a loaded machine makes them, then look at their verdicts.
	deadline := time.Now().Add(15 * time.Second)
	for {
		_, _, _, judged, skipped := b.checker.RollStats()
		if judged == 3 {
			break
		}
		if judged > 3 || time.Now().After(deadline) {
			t.Fatalf("judged %d roll retirements, want 3 (not judged: %v)", judged, skipped)
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.expectNone(InvRollFloor, "surged")
	b.expectNone(InvRollFloor, "full")
}

// seen waits until the checker's cache holds e as last written: the checker judges a
// retirement on what its cache shows when it sees it, and an instance it has not seen yet
// does not count (a fixed pause was too short on a loaded machine).
func (b *bench) seen(e *jumpstarterv1alpha1.Exporter) {
	b.t.Helper()
	eventually(b.t, 10*time.Second, "the checker's cache to hold "+e.Name+" as written", func() bool {
		var got jumpstarterv1alpha1.Exporter
		return b.checker.cache.Get(b.ctx, client.ObjectKeyFromObject(e), &got) == nil && got.ResourceVersion == e.ResourceVersion
	})
}
