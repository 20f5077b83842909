package exporterset_test

import (
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/internal/testing/fakeprov"
)

// An external set's only place, taken by an outdated instance at rest (no Pod), serves again
// once a Pod is wanted: at the ceiling there is no room to surge, and the last enabled
// Exporter is never removed, so before the fix it waited for room that could not come and
// the set stayed unavailable (the soak's seed 6889411519710295583, walk 2).

// The instance's remote target is gone (never built at rest): it is renewed to the current
// spec, and the target it gets is built from it.
func TestExternalLastPlaceWithoutTargetRenewedAndServes(t *testing.T) {
	w := newExtWorld(t)
	set := w.set("one", 0, 1, 0, func(s *vtv1alpha1.ExporterSet) { s.Spec.VirtualTargetClassName = "ext" })
	w.waitAtRest("one")
	if n := len(w.ext.Remotes()); n != 0 {
		t.Fatalf("%d remote targets at rest, want 0", n)
	}
	before := w.exporters("one")[0]
	enabled := w.watchEnabled("one")
	cw := w.watchCeiling("one", 1)
	w.edit(set, func() { set.Spec.Template.Metadata.Annotations = map[string]string{"rolled": "yes"} })
	w.eventually(30*time.Second, "the standby relabelled to the new spec", func() string {
		ex := w.exporters("one")
		if len(ex) != 1 || ex[0].Labels[pool.LabelSpecHash] == before.Labels[pool.LabelSpecHash] {
			return summary(w.getSet("one").Status)
		}
		return ""
	})
	w.edit(set, func() { set.Spec.MinAvailableReplicas = 1 })
	st := w.waitHealthy("one", 1, 60*time.Second)
	if ex := w.exporters("one"); len(ex) != 1 || ex[0].Name != before.Name || ex[0].Annotations["rolled"] != "yes" {
		t.Fatalf("want %s renewed in place and serving, got %d Exporters: %s", before.Name, len(ex), summary(st))
	}
	enabled.check(t)
	cw.check(t, 1, 0)
}

// The instance's target exists (its Pod rested after the cooldown): it is not rebuilt in
// place, but its Pod starts again on it, so the set serves on the old target rather than
// not at all.
func TestExternalLastPlaceAtRestWithTargetServes(t *testing.T) {
	w := newExtWorld(t)
	set := w.set("one", 1, 1, 1, func(s *vtv1alpha1.ExporterSet) { s.Spec.VirtualTargetClassName = "ext" })
	w.waitHealthy("one", 1, 60*time.Second)
	before := w.exporters("one")[0]
	w.edit(set, func() { set.Spec.MinReplicas, set.Spec.MinAvailableReplicas = 0, 0 })
	w.waitAtRest("one")
	if n := len(w.ext.Remotes()); n != 1 {
		t.Fatalf("%d remote targets at rest, want the one kept", n)
	}
	enabled := w.watchEnabled("one")
	cw := w.watchCeiling("one", 1)
	w.edit(set, func() {
		set.Spec.Template.Metadata.Annotations = map[string]string{"rolled": "yes"}
		set.Spec.MinAvailableReplicas = 1
	})
	st := w.waitHealthy("one", 1, 60*time.Second)
	if ex := w.exporters("one"); len(ex) != 1 || ex[0].Name != before.Name {
		t.Fatalf("want %s serving, got %d Exporters: %s", before.Name, len(ex), summary(st))
	}
	l := w.lease("after-roll", "one")
	w.waitServed(l)
	enabled.check(t)
	cw.check(t, 1, 0)
}

// The instance's target exists and its Pod serves: a roll at the ceiling leaves both as they
// are. Before the fix each pass renewed it in place, which rested its Pod without ever
// relabelling it (the target is kept), so the next pass started a fresh Pod and the one
// after rested it again: the exporter never stayed registered and the set never became
// available (the soak's seed 1796602166579767388).
func TestExternalLastPlaceServingWithTargetKeepsItsPod(t *testing.T) {
	w := newExtWorld(t)
	set := w.set("one", 1, 1, 1, func(s *vtv1alpha1.ExporterSet) { s.Spec.VirtualTargetClassName = "ext" })
	w.waitHealthy("one", 1, 60*time.Second)
	before := w.exporters("one")[0]
	pod := w.podUID(before.Name)
	enabled := w.watchEnabled("one")
	cw := w.watchCeiling("one", 1)
	dips := w.sampleAvailability("one")
	w.edit(set, func() { set.Spec.Template.Metadata.Annotations = map[string]string{"rolled": "yes"} })
	w.waitStatus("one", 30*time.Second, "the roll seen", func(st vtv1alpha1.ExporterSetStatus) bool {
		c := apimeta.FindStatusCondition(st.Conditions, string(vtv1alpha1.ConditionProgressing))
		return st.ObservedGeneration == w.getSet("one").Generation && c != nil && c.Reason == string(vtv1alpha1.ReasonRollingInstances)
	})
	time.Sleep(3 * time.Second) // passes run on every event of the set meanwhile
	if lowest, samples := dips.finish(); lowest < 1 {
		t.Errorf("availability fell to %d during the roll (%d samples): the serving Pod was rested", lowest, samples)
	}
	if now := w.podUID(before.Name); now != pod {
		t.Fatalf("the Pod on the kept target was replaced (%s -> %s)", pod, now)
	}
	if ex := w.exporters("one"); len(ex) != 1 || ex[0].Name != before.Name {
		t.Fatalf("want %s serving on, got %d Exporters", before.Name, len(ex))
	}
	l := w.lease("after-roll", "one")
	w.waitServed(l)
	enabled.check(t)
	cw.check(t, 1, 0)
}

// newExtWorld is a world with the controller running and class "ext" on the fake external
// provisioner.
func newExtWorld(t *testing.T) *world {
	w := newWorld(t)
	w.ext = fakeprov.NewExternal(w.fake)
	w.class("ext", func(c *vtv1alpha1.VirtualTargetClass) { c.Spec.Provisioner = fakeprov.ExternalName })
	w.controller(env.Config)
	return w
}
