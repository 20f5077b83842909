package exporterset_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// Leases that wait (a matching exporter exists but all are leased) raise the target by their
// count: all are served without touching the spec.
func TestDemandLeasesScaleUp(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	w.set("pool", 1, 5, 0)
	w.waitStatus("pool", 30*time.Second, "1 ready", func(s vtv1alpha1.ExporterSetStatus) bool { return s.ReadyReplicas == 1 })
	leases := []string{"a", "b", "c"}
	for _, name := range leases {
		w.lease(name, "pool")
	}
	w.lease("for-nothing", "nomatch") // ends Unsatisfiable at once: no demand for this pool
	w.waitStatus("pool", 30*time.Second, "all three leases served", func(s vtv1alpha1.ExporterSetStatus) bool {
		return s.LeasedReplicas == 3
	})
	if st := w.getSet("pool").Status; st.Replicas > 4 {
		t.Fatalf("demand of 3 plus floor 1 made %d instances", st.Replicas)
	}
}

// WaitForFirstConsumer keeps Exporters (so leases wait instead of ending Unsatisfiable) but
// starts a Pod only when a lease waits for one.
func TestWaitForFirstConsumer(t *testing.T) {
	w := newWorld(t)
	w.class("fake", func(c *vtv1alpha1.VirtualTargetClass) { c.Spec.BindingMode = vtv1alpha1.BindingWaitForFirstConsumer })
	w.controller(env.Config)
	w.set("pool", 2, 4, 0)
	w.waitStatus("pool", 20*time.Second, "2 exporters without pods", func(s vtv1alpha1.ExporterSetStatus) bool {
		return s.Replicas == 2 && s.PodsPending+s.PodsRunning == 0
	})
	time.Sleep(time.Second)
	var pods corev1.PodList
	if err := w.c.List(w.ctx, &pods, client.InNamespace(w.ns), client.MatchingLabels{pool.LabelSet: "pool"}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Fatalf("%d warm pods started under WaitForFirstConsumer", len(pods.Items))
	}
	l := w.lease("first", "pool")
	w.waitAssigned(l)
	// The status may trail the assignment by a pass: wait for it, then make sure the
	// other instance stayed without a Pod.
	w.waitStatus("pool", 10*time.Second, "the consumer's pod running", func(s vtv1alpha1.ExporterSetStatus) bool { return s.PodsRunning == 1 })
	time.Sleep(time.Second)
	if err := w.c.List(w.ctx, &pods, client.InNamespace(w.ns), client.MatchingLabels{pool.LabelSet: "pool"}); err != nil {
		t.Fatal(err)
	}
	if st := w.getSet("pool").Status; len(pods.Items) != 1 || st.PodsRunning+st.PodsPending != 1 {
		t.Fatalf("want exactly the consumer's pod, got %d pods, %s", len(pods.Items), summary(st))
	}
}

// Retain keeps a retired instance: disabled, released from the set, Pod left in place.
func TestReclaimRetainKeepsRetiredInstance(t *testing.T) {
	w := newWorld(t)
	w.class("fake", func(c *vtv1alpha1.VirtualTargetClass) { c.Spec.ReclaimPolicy = vtv1alpha1.ReclaimRetain })
	w.controller(env.Config)
	set := w.set("pool", 2, 4, 0)
	w.waitStatus("pool", 30*time.Second, "2 ready", func(s vtv1alpha1.ExporterSetStatus) bool { return s.ReadyReplicas == 2 })
	before := w.exporters("pool")
	w.edit(set, func() { set.Spec.MinReplicas = 1 }) // one retires; the other stays (leases wait on it)
	w.waitStatus("pool", 30*time.Second, "one released from the set", func(s vtv1alpha1.ExporterSetStatus) bool { return s.Replicas == 1 })
	time.Sleep(500 * time.Millisecond)
	name := before[0].Name
	if e := getExporter(t, w, name); e != nil && e.Labels[pool.LabelRetainedFrom] == "" {
		name = before[1].Name
	}
	e := getExporter(t, w, name)
	if e == nil || e.DeletionTimestamp != nil {
		t.Fatalf("retained exporter %s was deleted", name)
	}
	if e.IsEnabled() || e.Labels[pool.LabelRetainedFrom] != "pool" || len(e.OwnerReferences) != 0 {
		t.Fatalf("retained exporter not disabled and released: enabled=%v labels=%v owners=%v", e.IsEnabled(), e.Labels, e.OwnerReferences)
	}
	var pod corev1.Pod
	if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &pod); err != nil {
		t.Fatalf("retained instance's pod is gone: %v", err)
	}
}
