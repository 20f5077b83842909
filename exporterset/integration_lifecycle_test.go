package exporterset_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// A template change rolls idle instances to the new spec; the leased one keeps serving its
// lease on the old spec and is replaced only after the lease ends.
func TestTemplateChangeRollsIdleOnly(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	set := w.set("pool", 0, 6, 2)
	w.waitStatus("pool", 30*time.Second, "2 available", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas == 2 })
	l := w.lease("l1", "pool")
	busy := w.waitAssigned(l)
	w.waitStatus("pool", 30*time.Second, "buffer refilled", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas == 2 })

	oldHash := map[string]string{}
	for _, e := range w.exporters("pool") {
		oldHash[e.Name] = e.Labels[pool.LabelSpecHash]
	}
	w.edit(set, func() { set.Spec.Template.Metadata.Annotations = map[string]string{"rev": "2"} })

	w.eventually(30*time.Second, "idle instances rolled", func() string {
		newOnes := 0
		for _, e := range w.exporters("pool") {
			if _, old := oldHash[e.Name]; !old && e.Annotations["rev"] == "2" && e.IsEnabled() {
				newOnes++
			}
		}
		if newOnes < 2 {
			return "new instances: " + string(rune('0'+newOnes))
		}
		return ""
	})
	// The leased instance was not touched.
	var e = getExporter(t, w, busy)
	if e == nil || !e.IsEnabled() || e.Status.LeaseRef == nil || e.Labels[pool.LabelSpecHash] != oldHash[busy] {
		t.Fatalf("leased instance %s was disturbed: %+v", busy, e)
	}
	w.release(l)
	w.eventually(30*time.Second, "the formerly leased instance replaced", func() string {
		if e := getExporter(t, w, busy); e != nil && e.DeletionTimestamp == nil {
			return "still there"
		}
		return ""
	})
}

func TestInPlaceReuseFailedPodIsReplaced(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	w.set("pool", 1, 2, 0, func(s *vtv1alpha1.ExporterSet) { s.Spec.RecycleStrategy = vtv1alpha1.RecycleInPlaceReuse })
	w.waitStatus("pool", 30*time.Second, "1 ready", func(s vtv1alpha1.ExporterSetStatus) bool { return s.ReadyReplicas == 1 })
	name := w.exporters("pool")[0].Name
	var pod corev1.Pod
	if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &pod); err != nil {
		t.Fatal(err)
	}
	oldUID := pod.UID
	if err := w.sim.FailPod(w.ctx, w.ns, name); err != nil {
		t.Fatal(err)
	}
	waitNewRunningPod(w, name, oldUID, "a new pod for the same exporter")
	if got := w.exporters("pool"); len(got) != 1 || got[0].Name != name {
		t.Fatalf("the exporter was replaced instead of its pod: %v", got)
	}
	w.waitStatus("pool", 30*time.Second, "ready again", func(s vtv1alpha1.ExporterSetStatus) bool { return s.ReadyReplicas == 1 })

	// The same while leased: the lease holder gets its exporter back, the lease is not ended.
	l := w.lease("held", "pool")
	if got := w.waitAssigned(l); got != name {
		t.Fatalf("lease went to %s, want %s", got, name)
	}
	if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &pod); err != nil {
		t.Fatal(err)
	}
	oldUID = pod.UID
	if err := w.sim.FailPod(w.ctx, w.ns, name); err != nil {
		t.Fatal(err)
	}
	waitNewRunningPod(w, name, oldUID, "a new pod for the leased exporter")
	if err := w.c.Get(w.ctx, client.ObjectKeyFromObject(l), l); err != nil || l.Status.Ended {
		t.Fatalf("the lease ended when its pod was restarted: %v %+v", err, l.Status)
	}
}

// waitNewRunningPod waits until the Pod named name is a different one than oldUID, running.
func waitNewRunningPod(w *world, name string, oldUID types.UID, what string) {
	w.t.Helper()
	w.eventually(30*time.Second, what, func() string {
		var p corev1.Pod
		if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &p); err != nil {
			return err.Error()
		}
		if p.UID == oldUID || p.Status.Phase != corev1.PodRunning {
			return "old pod or not running: " + string(p.Status.Phase)
		}
		return ""
	})
}
