package exporterset_test

import (
	"fmt"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
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
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == string(vtv1alpha1.ReasonAtMaxReplicas)
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
	set := w.set("pool", 3, 5, 0, func(s *vtv1alpha1.ExporterSet) {
		s.Spec.ScaleDownCooldown = &metav1.Duration{Duration: 6 * time.Second}
	})
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

// Scale-down races the lease scheduler. First deterministically: with two instances leased,
// dropping the floor to zero retires only the idle ones, and the leased ones go only once
// released. Then leases arrive while the set shrinks: no Exporter holding a lease is ever
// disabled or deleted, and every lease ends up either assigned or Unsatisfiable.
func TestScaleDownNeverRetiresLeased(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	set := w.set("pool", 6, 8, 0, func(s *vtv1alpha1.ExporterSet) { s.Spec.ScaleDownCooldown = &metav1.Duration{} })
	w.waitStatus("pool", 30*time.Second, "6 ready", func(s vtv1alpha1.ExporterSetStatus) bool { return s.ReadyReplicas == 6 })
	stopWatch := watchLeasedNeverRetired(t, w, "pool")
	defer stopWatch()

	held := []*jumpstarterv1alpha1.Lease{w.lease("held-0", "pool"), w.lease("held-1", "pool")}
	holders := map[string]bool{}
	for _, l := range held {
		holders[w.waitAssigned(l)] = true
	}
	w.edit(set, func() { set.Spec.MinReplicas = 0 })
	w.waitStatus("pool", 30*time.Second, "only the leased instances left", func(s vtv1alpha1.ExporterSetStatus) bool {
		return s.Replicas == 2 && s.LeasedReplicas == 2
	})
	for _, e := range w.exporters("pool") {
		if !holders[e.Name] || !e.IsEnabled() {
			t.Fatalf("after scale-down %s remains (enabled=%v); want only the lease holders %v", e.Name, e.IsEnabled(), holders)
		}
	}
	for _, l := range held {
		w.release(l)
	}
	w.waitStatus("pool", 30*time.Second, "at rest after the releases", atRest)

	// The race: the floor jumps up and down while leases arrive.
	var racing []*jumpstarterv1alpha1.Lease
	for round := 0; round < 3; round++ {
		w.edit(set, func() { set.Spec.MinReplicas = 4 })
		w.waitStatus("pool", 30*time.Second, "4 ready", func(s vtv1alpha1.ExporterSetStatus) bool { return s.ReadyReplicas >= 4 })
		for k := 0; k < 2; k++ {
			racing = append(racing, w.lease(fmt.Sprintf("race-%d-%d", round, k), "pool"))
		}
		w.edit(set, func() { set.Spec.MinReplicas = 0 })
		time.Sleep(500 * time.Millisecond)
	}
	for _, l := range racing {
		w.eventually(20*time.Second, "lease "+l.Name+" assigned or unsatisfiable", func() string {
			if err := w.c.Get(w.ctx, client.ObjectKeyFromObject(l), l); err != nil {
				return err.Error()
			}
			if l.Status.ExporterRef != nil || apimeta.IsStatusConditionTrue(l.Status.Conditions, jumpstarterv1alpha1.LeaseConditionUnsatisfiable) {
				return ""
			}
			return fmt.Sprintf("%v", l.Status.Conditions)
		})
	}
}
