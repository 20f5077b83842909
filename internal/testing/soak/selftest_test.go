package soak

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	expool "github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/internal/testing/fakeprov"
)

// The self-tests prove that the soak fails for real: each invariant is broken on purpose, by
// hand, against the real API server (no controller running, so nothing repairs it), and the
// checker must say so.

// selfTestCeiling makes the ceiling invariants and the live Available check fire fast.
var selfTestCeiling = func() CeilingOptions {
	o := DefaultCeilingOptions()
	o.Confirm, o.Recent, o.StayGrace, o.AvailableGrace = 300*time.Millisecond, 300*time.Millisecond, time.Second, time.Second
	o.Starve = time.Second
	o.RefuseGrace = 3 * time.Second
	return o
}()

type bench struct {
	t       *testing.T
	ctx     context.Context
	ns      string
	c       client.Client
	checker *Checker
	history *History
}

func newBench(t *testing.T) *bench {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ns, err := env.CreateNamespace(ctx, "soak-self")
	if err != nil {
		t.Fatal(err)
	}
	h := NewHistory(100)
	ch, err := NewChecker(env.Config, ns, h, selfTestCeiling)
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.Start(ctx); err != nil {
		t.Fatal(err)
	}
	return &bench{t: t, ctx: ctx, ns: ns, c: env.Client, checker: ch, history: h}
}

func (b *bench) create(obj client.Object) {
	b.t.Helper()
	obj.SetNamespace(b.ns)
	if err := b.c.Create(b.ctx, obj); err != nil {
		b.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// set creates a class and a set with the given ceiling, as the walk's pools are.
func (b *bench) set(name string, maxR int32) *vtv1alpha1.ExporterSet {
	p := &pool{set: name, class: name, provisioner: fakeprov.Name, recycle: vtv1alpha1.RecycleExitAndReplace, max: maxR}
	b.create(newClass(b.ns, p))
	s := newSet(b.ns, p)
	b.create(s)
	return s
}

// exporter creates an Exporter controlled by set, as the reconciler would, optionally leased.
func (b *bench) exporter(name string, set *vtv1alpha1.ExporterSet, lease string) *jumpstarterv1alpha1.Exporter {
	b.t.Helper()
	e := &jumpstarterv1alpha1.Exporter{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{expool.LabelSet: set.Name, "board": set.Name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, vtv1alpha1.GroupVersion.WithKind("ExporterSet"))}},
		Spec: jumpstarterv1alpha1.ExporterSpec{Enabled: ptr.To(true)},
	}
	b.create(e)
	if lease != "" {
		e.Status.LeaseRef = &corev1.LocalObjectReference{Name: lease}
		if err := b.c.Status().Update(b.ctx, e); err != nil {
			b.t.Fatal(err)
		}
	}
	return e
}

// patch applies mutate to e with a merge patch.
func (b *bench) patch(e *jumpstarterv1alpha1.Exporter, mutate func(*jumpstarterv1alpha1.Exporter)) {
	b.t.Helper()
	before := e.DeepCopy()
	mutate(e)
	if err := b.c.Patch(b.ctx, e, client.MergeFrom(before)); err != nil {
		b.t.Fatal(err)
	}
}

func (b *bench) delete(obj client.Object) {
	b.t.Helper()
	if err := b.c.Delete(b.ctx, obj); err != nil {
		b.t.Fatal(err)
	}
}

// final runs the final check once and returns its problems, one per line.
func (b *bench) final() string {
	b.t.Helper()
	problems, err := b.checker.Final(b.ctx)
	if err != nil {
		b.t.Fatal(err)
	}
	joined := strings.Join(problems, "\n")
	b.t.Logf("final problems:\n%s", joined)
	return joined
}

// expect waits for a violation of inv about object.
func (b *bench) expect(inv, object string) {
	b.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, v := range b.checker.Violations() {
			if v.Invariant == inv && v.Object == object {
				b.t.Logf("detected as expected: %s", v)
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.t.Fatalf("no %s violation about %s; violations: %v", inv, object, b.checker.Violations())
}

// expectNone fails if a violation of inv about object was recorded.
func (b *bench) expectNone(inv, object string) {
	b.t.Helper()
	for _, v := range b.checker.Violations() {
		if v.Invariant == inv && v.Object == object {
			b.t.Fatalf("unexpected violation: %s", v)
		}
	}
}

func TestCheckerDetectsLeaseSafetyViolations(t *testing.T) {
	b := newBench(t)
	set := b.set("safe", 0)

	// The controller's disable (annotation) of a leased Exporter is a violation...
	e1 := b.exporter("safe-1", set, "lease-1")
	b.patch(e1, func(e *jumpstarterv1alpha1.Exporter) {
		e.Annotations = map[string]string{expool.AnnotationRetiring: time.Now().UTC().Format(time.RFC3339)}
		e.Spec.Enabled = ptr.To(false)
	})
	b.expect(InvLeasedDisabled, "safe-1")

	// ... a person's (no annotation) is not.
	e2 := b.exporter("safe-2", set, "lease-2")
	b.patch(e2, func(e *jumpstarterv1alpha1.Exporter) { e.Spec.Enabled = ptr.To(false) })

	// Deleting a leased Exporter is a violation, whoever does it.
	b.delete(e2)
	b.expect(InvLeasedDeleted, "safe-2")

	// Deleting an idle Exporter that was neither retired nor exited is a violation; one that
	// was retired is not.
	e3 := b.exporter("safe-3", set, "")
	b.delete(e3)
	b.expect(InvDeletedUnretired, "safe-3")
	e4 := b.exporter("safe-4", set, "")
	b.patch(e4, func(e *jumpstarterv1alpha1.Exporter) {
		e.Annotations = map[string]string{expool.AnnotationRetiring: time.Now().UTC().Format(time.RFC3339)}
		e.Spec.Enabled = ptr.To(false)
	})
	b.delete(e4)

	// A Lease still assigned to a deleted Exporter (its leaseRef not written yet) is a
	// violation too.
	e5 := b.exporter("safe-5", set, "")
	l := &jumpstarterv1alpha1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "lease-5"},
		Spec: jumpstarterv1alpha1.LeaseSpec{ClientRef: corev1.LocalObjectReference{Name: "c"}, Selector: metav1.LabelSelector{MatchLabels: map[string]string{"board": "safe"}}}}
	b.create(l)
	l.Status.ExporterRef = &corev1.LocalObjectReference{Name: "safe-5"}
	l.Status.BeginTime = ptr.To(metav1.NewTime(time.Now().Add(time.Second)))
	if err := b.c.Status().Update(b.ctx, l); err != nil {
		t.Fatal(err)
	}
	b.delete(e5)
	b.expect(InvLeaseLost, "safe-5")

	time.Sleep(deletionJudgeDelay + 500*time.Millisecond)
	b.expectNone(InvLeasedDisabled, "safe-2")
	b.expectNone(InvDeletedUnretired, "safe-4")
}

func TestCheckerDetectsCeilingViolations(t *testing.T) {
	b := newBench(t)
	set := b.set("over", 1)
	// Three live instances for maxReplicas 1: more than the ceiling with nothing recycling.
	for _, n := range []string{"over-1", "over-2", "over-3"} {
		b.exporter(n, set, "")
	}
	b.expect(InvOverCeiling, "over")
	b.expect(InvStaysAbove, "over")
	b.expect(InvWatchedOverCeiling, "over")

	// Counted from the watch, an Exporter on its way out still exists: a replacement created
	// beside one that a finalizer holds takes the set over maxReplicas 1, though the
	// sampled count (which leaves out those being recycled) sees one.
	overlap := b.set("overlap", 1)
	old := b.exporter("overlap-1", overlap, "")
	b.patch(old, func(e *jumpstarterv1alpha1.Exporter) { e.Finalizers = []string{"soak.test/hold"} })
	b.delete(old)
	b.exporter("overlap-2", overlap, "")
	b.expect(InvWatchedOverCeiling, "overlap")
	b.patch(old, func(e *jumpstarterv1alpha1.Exporter) { e.Finalizers = nil })

	// Leased instances cannot be retired: above a ceiling lowered under them is no violation.
	held := b.set("held", 3)
	b.exporter("held-1", held, "lease-a")
	b.exporter("held-2", held, "lease-b")
	b.exporter("held-3", held, "lease-c")
	held.Spec.MaxReplicas = ptr.To(int32(2))
	if err := b.c.Update(b.ctx, held); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * selfTestCeiling.StayGrace)
	b.expectNone(InvOverCeiling, "held")
	b.expectNone(InvStaysAbove, "held")
	b.expectNone(InvWatchedOverCeiling, "held")
}

func TestFinalDetectsOrphansAndStaleStatus(t *testing.T) {
	b := newBench(t)
	set := b.set("final", 2)
	b.exporter("final-1", set, "")
	stuck := b.exporter("final-2", set, "")
	b.patch(stuck, func(e *jumpstarterv1alpha1.Exporter) {
		e.Annotations = map[string]string{expool.AnnotationRetiring: time.Now().UTC().Format(time.RFC3339)}
		e.Spec.Enabled = ptr.To(false)
	})
	b.create(&jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: "lonely", Labels: map[string]string{expool.LabelSet: "final"}}})
	b.create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: jumpstarterv1alpha1.GroupVersion.String(), Kind: "Exporter", Name: "gone", UID: types.UID("no-such-uid"), Controller: ptr.To(true)}}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example"}}},
	})
	b.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "loose-config", Labels: map[string]string{expool.LabelSet: "final"}}})

	joined := b.final()
	for _, want := range []string{
		"set final: status differs from a recomputation: replicas=0 (want 2)", // nobody wrote the status
		"set final: instance final-2 is still being recycled",
		"exporter lonely has no existing ExporterSet as its controller",
		"orphaned pod orphan",
		"secret loose-config is labelled for set final but owned by no Exporter",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("the final check missed %q", want)
		}
	}
}

// TestWalkStopsAtFirstViolation runs a real (short) soak with a violation injected into the
// checker: the walk must stop at once and the run must fail, naming the seed.
func TestWalkStopsAtFirstViolation(t *testing.T) {
	res := runSoak(t, Config{Seed: 7, Duration: time.Minute, InjectViolationAfter: 3 * time.Second})
	t.Log(res.Summary())
	if !res.Failed() || len(res.Violations) == 0 || res.Violations[0].Invariant != InvInjected {
		t.Fatalf("the injected violation was not reported: %+v", res.Violations)
	}
	if res.Walked > 30*time.Second {
		t.Errorf("the walk went on for %s after the violation", res.Walked)
	}
	if r := res.Report(); !strings.Contains(r, "seed 7") || !strings.Contains(r, InvInjected) || !strings.Contains(r, " action ") {
		t.Errorf("the report lacks the seed, the violation or the history:\n%s", r)
	}
}

// TestFinalCountsEveryLeaseAgainstTheCeiling pins down a false alarm the soak raised: an
// instance whose retirement a lease raced stays (leased, retiring) and occupies the ceiling,
// so with another leased instance at maxReplicas 2 there is no room for a warm one.
func TestFinalCountsEveryLeaseAgainstTheCeiling(t *testing.T) {
	p := &pool{set: "full", class: "full", provisioner: fakeprov.Name, recycle: vtv1alpha1.RecycleInPlaceReuse, max: 2, minAvail: 1}
	set := newSet("ns", p)
	set.UID = "set-uid"
	owned := func(name string, mutate func(*jumpstarterv1alpha1.Exporter)) jumpstarterv1alpha1.Exporter {
		e := jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name),
			Labels:          map[string]string{expool.LabelSet: "full", "board": "full"},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, vtv1alpha1.GroupVersion.WithKind("ExporterSet"))}},
			Spec:   jumpstarterv1alpha1.ExporterSpec{Enabled: ptr.To(true)},
			Status: jumpstarterv1alpha1.ExporterStatus{LeaseRef: &corev1.LocalObjectReference{Name: "lease-" + name}}}
		mutate(&e)
		return e
	}
	exporters := []jumpstarterv1alpha1.Exporter{
		owned("busy", func(*jumpstarterv1alpha1.Exporter) {}),
		owned("raced", func(e *jumpstarterv1alpha1.Exporter) {
			e.Annotations = map[string]string{expool.AnnotationRetiring: "2026-01-01T00:00:00Z"}
			e.Spec.Enabled = ptr.To(false)
		}),
	}
	set.Status = expool.ComputeStatus(instancesOf(set, exporters, nil), nil).Status()
	problems := finalSet(set, map[string]vtv1alpha1.BindingMode{"full": vtv1alpha1.BindingWaitForFirstConsumer}, exporters, nil, nil, false)
	if len(problems) > 0 {
		t.Errorf("a full set with every instance leased is converged, got: %v", problems)
	}
}
