package exporterset_test

import (
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
)

func TestCeilingHonouredAndScalingLimited(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	w.set("pool", 2, 3, 5, func(s *vtv1alpha1.ExporterSet) { s.Spec.MaxReplicas = ptr.To[int32](6) })
	set := w.getSet("pool")
	w.waitStatus("pool", 30*time.Second, "5 available", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas == 5 })
	// kubectl scale moves the ceiling below the buffer.
	w.edit(set, func() { set.Spec.MaxReplicas = ptr.To[int32](5); set.Spec.MinAvailableReplicas = 5 })
	w.edit(set, func() { set.Spec.MinAvailableReplicas = 4 })
	w.edit(set, func() { set.Spec.MaxReplicas = ptr.To[int32](4) })
	w.waitStatus("pool", 30*time.Second, "the ceiling of 4", func(s vtv1alpha1.ExporterSetStatus) bool {
		return s.Replicas == 4
	})
	// Demand beyond the ceiling: ScalingLimited.
	w.edit(set, func() { set.Spec.MinReplicas = 4 })
	w.edit(set, func() { set.Spec.MinAvailableReplicas = 4 })
	for _, name := range []string{"a", "b"} {
		w.lease(name, "pool")
	}
	st := w.waitStatus("pool", 30*time.Second, "ScalingLimited", func(s vtv1alpha1.ExporterSetStatus) bool {
		c := apimeta.FindStatusCondition(s.Conditions, vtv1alpha1.ConditionScalingLimited)
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == vtv1alpha1.ReasonAtMaxReplicas
	})
	if st.Replicas > 4 {
		t.Fatalf("replicas %d above maxReplicas 4", st.Replicas)
	}
	time.Sleep(2 * time.Second)
	if n := len(w.exporters("pool")); n > 4 {
		t.Fatalf("%d exporters above maxReplicas 4", n)
	}
}

// The cooldown clock lives in status: a controller restarted in the middle of a cooldown
// neither retires early nor starts the clock over.
func TestCooldownSurvivesRestart(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	stop := w.controller(env.Config)
	set := w.set("pool", 3, 5, 0, func(s *vtv1alpha1.ExporterSet) { s.Spec.ScaleDownCooldown = &metav1.Duration{Duration: 6 * time.Second} })
	w.waitStatus("pool", 30*time.Second, "3 ready", func(s vtv1alpha1.ExporterSetStatus) bool { return s.ReadyReplicas == 3 })

	w.edit(set, func() { set.Spec.MinReplicas = 1 })
	st := w.waitStatus("pool", 10*time.Second, "the cooldown clock", func(s vtv1alpha1.ExporterSetStatus) bool { return s.SurplusSince != nil })
	since := st.SurplusSince.Time
	deadline := since.Add(6 * time.Second)

	time.Sleep(2 * time.Second)
	stop()
	w.controller(env.Config) // a new process: nothing in memory

	for time.Now().Before(deadline.Add(-500 * time.Millisecond)) {
		for _, e := range w.exporters("pool") {
			if !e.IsEnabled() {
				t.Fatalf("%s retired at %s, before the cooldown ended at %s", e.Name, time.Now().Format(time.RFC3339Nano), deadline.Format(time.RFC3339))
			}
		}
		if s := w.getSet("pool").Status.SurplusSince; s == nil || !s.Time.Equal(since) {
			t.Fatalf("the restart changed the cooldown clock from %v to %v", since, s)
		}
		time.Sleep(100 * time.Millisecond)
	}
	w.waitStatus("pool", 15*time.Second, "scale-down to 1 after the cooldown", func(s vtv1alpha1.ExporterSetStatus) bool {
		return s.Replicas == 1 && s.SurplusSince == nil
	})
	if time.Now().Before(deadline) {
		t.Fatalf("scaled down before %s", deadline)
	}
}

// Scale-down races the lease scheduler: leases arrive while the set shrinks. No Exporter that
// holds a lease is ever disabled or deleted.
func TestScaleDownNeverRetiresLeased(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	set := w.set("pool", 6, 8, 0, func(s *vtv1alpha1.ExporterSet) { s.Spec.ScaleDownCooldown = &metav1.Duration{} })
	w.waitStatus("pool", 30*time.Second, "6 ready", func(s vtv1alpha1.ExporterSetStatus) bool { return s.ReadyReplicas == 6 })

	stopWatch := watchLeasedNeverRetired(t, w, "pool")
	leases := []string{"l0", "l1", "l2", "l3"}
	w.edit(set, func() { set.Spec.MinReplicas = 0 })
	for _, name := range leases {
		w.lease(name, "pool")
	}
	time.Sleep(3 * time.Second)
	stopWatch()
	for _, e := range w.exporters("pool") {
		if e.Status.LeaseRef != nil && !e.IsEnabled() && e.Annotations[exporterset.AnnotationRetiring] != "" {
			// A retiring leased exporter is allowed only if the lease came after the disable
			// (the scheduler does not assign disabled exporters); the watcher checked that.
			t.Logf("%s was leased while retiring", e.Name)
		}
	}
}
