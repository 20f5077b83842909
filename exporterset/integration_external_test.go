package exporterset_test

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/internal/testing/fakeprov"
	"github.com/exporterset/exporterset/internal/tuning"
)

// After an outage of the external pool's remote end, the set is looked at again within its
// poll interval, however many passes failed their remote calls meanwhile. Returned as
// errors, those failures backed the set off in the workqueue, doubling with every failed
// pass (each watch event during the outage adds one) up to a quarter of an hour: after an
// 8 s outage the soak's external pool stayed RemoteUnreachable past the settle bound (NOT
// CONVERGED).
func TestRemoteOutageEndsWithinThePollInterval(t *testing.T) {
	w := newWorld(t)
	w.ext = fakeprov.NewExternal(w.fake)
	w.class("ext", func(c *vtv1alpha1.VirtualTargetClass) { c.Spec.Provisioner = fakeprov.ExternalName })
	// A short inventory interval: the sweep, a remote call too, runs during the outage.
	w.controller(env.Config, exporterset.WithTuning(tuning.Knobs{InventoryInterval: time.Second}))
	w.set("ext", 2, 2, 1, func(s *vtv1alpha1.ExporterSet) { s.Spec.VirtualTargetClassName = "ext" })
	w.waitHealthy("ext", 2, 60*time.Second)

	w.ext.SetUnreachable(true)
	w.waitStatus("ext", 20*time.Second, "Degraded RemoteUnreachable", func(s vtv1alpha1.ExporterSetStatus) bool {
		r, _ := degraded(s)
		return r == vtv1alpha1.ReasonRemoteUnreachable
	})
	// Watch events during the outage, each a pass that meets the unreachable remote end.
	var pods corev1.PodList
	if err := w.c.List(w.ctx, &pods, client.InNamespace(w.ns), client.MatchingLabels{pool.LabelSet: "ext"}); err != nil || len(pods.Items) == 0 {
		t.Fatalf("listing the set's Pods: %v (%d)", err, len(pods.Items))
	}
	for i := range 30 {
		pod := &pods.Items[i%len(pods.Items)]
		patch := client.RawPatch("application/merge-patch+json", fmt.Appendf(nil, `{"metadata":{"annotations":{"test/poke":"%d"}}}`, i))
		if err := w.c.Patch(w.ctx, pod, patch); err != nil {
			t.Fatal(err)
		}
		time.Sleep(200 * time.Millisecond) // one pass per event, not one for them all
	}

	w.ext.SetUnreachable(false)
	ended := time.Now()
	// The poll interval is 2 s; the bound leaves room for a loaded machine, and is far below
	// the backoff the failed passes piled up before the fix (minutes).
	st := w.waitHealthy("ext", 2, 20*time.Second)
	t.Logf("healthy again %s after the remote end answered: %s", time.Since(ended).Round(100*time.Millisecond), summary(st))
}
