package exporterset_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// At a ceiling of 1, every way the only instance leaves keeps an enabled Exporter for Leases
// to wait on (pool/leasewait.go), counted from a watch, and the ceiling holds.

// A roll at a ceiling of 1 renews the only instance in place: the Exporter is brought to the
// new spec and gets a fresh Pod, instead of being retired before its replacement exists.
func TestRollAtCeilingOneRenewsInPlace(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	set := w.set("one", 0, 1, 1)
	w.waitHealthy("one", 1, 30*time.Second)
	before := w.exporters("one")[0]
	enabled := w.watchEnabled("one")
	cw := w.watchCeiling("one", 1)
	w.edit(set, func() { set.Spec.Template.Metadata.Annotations = map[string]string{"rolled": "yes"} })
	w.eventually(30*time.Second, "the instance renewed to the new spec and available", func() string {
		ex := w.exporters("one")
		st := w.getSet("one").Status
		if len(ex) != 1 || ex[0].Annotations["rolled"] != "yes" || ex[0].Labels[pool.LabelSpecHash] == before.Labels[pool.LabelSpecHash] || st.AvailableReplicas != 1 {
			return summary(st)
		}
		if ex[0].Name != before.Name {
			return "a new Exporter, not renewed in place: " + ex[0].Name
		}
		return ""
	})
	w.eventually(10*time.Second, "a Renewed event", func() string {
		if w.eventCount("one", "Renewed") == 0 {
			return "none"
		}
		return ""
	})
	enabled.check(t)
	cw.check(t, 1, 0)
}

// Scale-down to rest at a ceiling of 1: with the floor and the buffer lowered to 0, the idle
// instance's Pod goes after the cooldown and its Exporter stays, at rest.
func TestScaleDownToRestAtCeilingOne(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	set := w.set("one", 1, 1, 1)
	w.waitHealthy("one", 1, 30*time.Second)
	enabled := w.watchEnabled("one")
	w.edit(set, func() { set.Spec.MinReplicas, set.Spec.MinAvailableReplicas = 0, 0 })
	w.waitAtRest("one")
	l := w.lease("after-rest", "one")
	w.waitServed(l)
	enabled.check(t)
}

// Retirement by use at a ceiling of 1 (InPlaceReuse, max-use-count 1): the used-up instance is
// renewed in place (its use count dropped, a fresh Pod) and serves the next lease.
func TestUsedUpAtCeilingOneRenewsInPlace(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	w.set("one", 0, 1, 1, inPlaceReuse(map[string]string{exporterset.AnnotationMaxUseCount: "1"}))
	w.waitHealthy("one", 1, 30*time.Second)
	enabled := w.watchEnabled("one")
	cw := w.watchCeiling("one", 1)
	for _, name := range []string{"first", "second", "third"} {
		l := w.lease(name, "one")
		w.waitServed(l)
		w.release(l)
		w.waitStatus("one", 30*time.Second, "available again", func(s vtv1alpha1.ExporterSetStatus) bool {
			return s.AvailableReplicas == 1 && s.LeasedReplicas == 0
		})
	}
	w.eventually(10*time.Second, "Renewed events for the used-up instance", func() string {
		if n := w.eventCount("one", "Renewed"); n < 2 {
			return fmt.Sprintf("%d Renewed events after three leases at max-use-count 1, want at least 2", n)
		}
		return ""
	})
	enabled.check(t)
	cw.check(t, 1, 0)
}

// A failed lease hook at a ceiling of 1 (InPlaceReuse): the only instance is not quarantined
// (disabled, it would make the core refuse every Lease as AllDisabled, and no replacement
// fits beside it); it stays enabled, its Pod is replaced, and the next lease is served.
func TestQuarantineAtCeilingOneRenewsInPlace(t *testing.T) {
	w := newWorld(t)
	w.hookClass(`test "$LEASE_NAME" != first`, "endLease")
	w.controller(env.Config)
	w.set("pool", 0, 1, 1, reuseSet(""))
	w.waitHealthy("pool", 1, 30*time.Second)
	enabled := w.watchEnabled("pool")
	cw := w.watchCeiling("pool", 1)
	l := w.lease("first", "pool")
	name := w.waitServed(l)
	pod := w.podUID(name)
	w.release(l)
	w.waitFreshPod(name, pod)
	w.eventually(10*time.Second, "the event saying why it was not quarantined", func() string {
		for _, n := range w.eventNotes("pool", "InstanceQuarantined") {
			if strings.Contains(n, name) && strings.Contains(n, "instead of quarantined") {
				return ""
			}
		}
		return fmt.Sprintf("events %v", w.eventNotes("pool", "InstanceQuarantined"))
	})
	next := w.lease("second", "pool")
	if got := w.waitServed(next); got != name {
		t.Errorf("the second lease went to %s, want the renewed %s", got, name)
	}
	if e := getExporter(t, w, name); e == nil || !e.IsEnabled() || e.Annotations[pool.AnnotationQuarantined] != "" {
		t.Errorf("the only instance was disabled or marked quarantined: %+v", e)
	}
	enabled.check(t)
	cw.check(t, 1, 0)
}
