package soak

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	expool "github.com/exporterset/exporterset/exporterset/pool"
)

// quarantine marks and disables e in one write, as the set does.
func (b *bench) quarantine(e *jumpstarterv1alpha1.Exporter) {
	b.t.Helper()
	b.patch(e, func(e *jumpstarterv1alpha1.Exporter) {
		e.Annotations = map[string]string{expool.AnnotationQuarantined: expool.QuarantineMark("AfterLeaseHookFailed", time.Now())}
		e.Spec.Enabled = ptr.To(false)
	})
}

// assign creates a lease of set and assigns it to the Exporter named exporter, as the lease
// scheduler writes it (the status first).
func (b *bench) assign(name string, set *vtv1alpha1.ExporterSet, exporter string) {
	b.t.Helper()
	l := &jumpstarterv1alpha1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: jumpstarterv1alpha1.LeaseSpec{ClientRef: corev1.LocalObjectReference{Name: "c"}, Selector: metav1.LabelSelector{MatchLabels: map[string]string{"board": set.Name}}}}
	b.create(l)
	l.Status.ExporterRef = &corev1.LocalObjectReference{Name: exporter}
	l.Status.BeginTime = ptr.To(metav1.Now())
	if err := b.c.Status().Update(b.ctx, l); err != nil {
		b.t.Fatal(err)
	}
}

// The quarantine invariant fires for a lease assigned to a quarantined instance beyond the
// scheduler's race, and for a mark written without the disable; it stays quiet for an
// instance a person enabled again, a lease assigned before the quarantine, one assigned
// just after it (counted as raced), and the removal of a quarantined instance without
// retiring it.
func TestCheckerDetectsLeaseOnQuarantinedInstance(t *testing.T) {
	b := newBench(t)
	set := b.set("quar", 0)

	q1 := b.exporter("quar-1", set, "")
	b.quarantine(q1)
	q2 := b.exporter("quar-2", set, "")
	b.quarantine(q2)
	b.assign("lease-3", set, "quar-3-placeholder") // unknown exporter: not judged
	q3 := b.exporter("quar-3", set, "")
	b.assign("lease-before", set, "quar-3")
	b.quarantine(q3)
	time.Sleep(quarantineRaceGrace + 300*time.Millisecond)

	// A person enables quar-2 again: back in service.
	b.patch(q2, func(e *jumpstarterv1alpha1.Exporter) { e.Spec.Enabled = ptr.To(true) })
	b.assign("lease-1", set, "quar-1")
	b.assign("lease-2", set, "quar-2")
	b.expect(InvLeaseToQuarantined, "quar-1")

	// Just after a quarantine, the scheduler's cache may still show the Exporter enabled.
	q4 := b.exporter("quar-4", set, "")
	b.quarantine(q4)
	b.assign("lease-4", set, "quar-4")

	// The mark must come with the disable.
	q5 := b.exporter("quar-5", set, "")
	b.patch(q5, func(e *jumpstarterv1alpha1.Exporter) {
		e.Annotations = map[string]string{expool.AnnotationQuarantined: expool.QuarantineMark("AfterLeaseHookFailed", time.Now())}
	})
	b.expect(InvQuarantineEnabled, "quar-5")

	// The quarantine's rules remove a quarantined instance without retiring it.
	q6 := b.exporter("quar-6", set, "")
	b.quarantine(q6)
	b.delete(q6)

	time.Sleep(max(assignJudgeDelay, deletionJudgeDelay) + 500*time.Millisecond)
	b.checker.FlushQuarantine()
	for _, name := range []string{"quar-2", "quar-3", "quar-4"} {
		b.expectNone(InvLeaseToQuarantined, name)
	}
	b.expectNone(InvDeletedUnretired, "quar-6")
	quarantines, reenabled, _, judged, raced := b.checker.QuarantineStats()
	if quarantines != 5 || reenabled != 1 || raced != 1 || judged != 5 {
		t.Fatalf("quarantines %d (want 5), enabled again %d (want 1), raced %d (want 1), assignments judged %d (want 5)", quarantines, reenabled, raced, judged)
	}
}
