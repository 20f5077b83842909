package exporterset_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/internal/testing/fakeprov"
	"github.com/exporterset/exporterset/provisioner"
)

// hostedWorld runs a controller serving the hosted fake, whose units' exporters connect to
// jumpsim's core from outside the cluster (as a lab host's do), and a set "lab" of it.
func hostedWorld(t *testing.T, minR, maxR, minAvail int32, opts ...exporterset.Option) (*world, *fakeprov.Hosted) {
	w := newWorld(t)
	h := fakeprov.NewHosted()
	h.OnStart = func(ctx context.Context, ns, name string) error { return w.sim.ConnectFromOutside(ctx, ns, name) }
	h.OnStop = func(ctx context.Context, ns, name string) error { return w.sim.DisconnectFromOutside(ctx, ns, name) }
	registry := w.fake.Registry()
	if err := h.Register(registry); err != nil {
		t.Fatal(err)
	}
	w.controllerServing(env.Config, registry, opts...)
	w.class("lab", func(c *vtv1alpha1.VirtualTargetClass) { c.Spec.Provisioner = fakeprov.HostedName })
	w.set("lab", minR, maxR, minAvail, func(s *vtv1alpha1.ExporterSet) { s.Spec.VirtualTargetClassName = "lab" })
	return w, h
}

// runningUnits are the names of the instances whose unit runs.
func runningUnits(h *fakeprov.Hosted) []string {
	var out []string
	for _, u := range h.Units() {
		if u.Exit == nil {
			out = append(out, u.Instance)
		}
	}
	return out
}

// A hosted provisioner's instances run their exporter on a lab host, with no Pod: each unit
// is started with the instance's rendered config, counted in the status as a Pod, and
// removed with its instance.
func TestHostedUnitsServeWithoutPods(t *testing.T) {
	w, h := hostedWorld(t, 0, 3, 2)
	w.waitHealthy("lab", 2, 60*time.Second)
	// A unit's exporter may register before its record is on the Exporter: the pass after
	// the record counts it.
	w.waitStatus("lab", 10*time.Second, "the 2 running units counted as running Pods", func(s vtv1alpha1.ExporterSetStatus) bool {
		return s.PodsRunning == 2 && s.RestingReplicas == 0
	})
	if pods := w.podsOf("lab"); len(pods) != 0 {
		t.Fatalf("a hosted set has %d Pods, want none", len(pods))
	}
	if n := h.Calls("RenderPod"); n != 0 {
		t.Errorf("RenderPod called %d times for a hosted set", n)
	}
	units := h.Units()
	if len(units) != 2 {
		t.Fatalf("%d units, want 2: %+v", len(units), units)
	}
	for _, u := range units {
		e := getExporter(t, w, u.Instance)
		if e == nil {
			t.Fatalf("unit %s has no Exporter", u.Name)
		}
		if !bytes.Contains(u.Config, []byte("token: ")) || !bytes.Contains(u.Config, []byte(e.Status.Endpoint)) {
			t.Errorf("unit %s was not started with its instance's rendered config:\n%s", u.Name, u.Config)
		}
		if !slices.Contains(e.Finalizers, exporterset.FinalizerExternal) || e.Annotations[fakeprov.AnnotationUnit] != u.Name {
			t.Errorf("Exporter %s lacks its clean-up finalizer or the unit's record: %v %v", e.Name, e.Finalizers, e.Annotations)
		}
	}

	// The set is deleted: every unit goes with its instance.
	set := w.getSet("lab")
	if err := w.c.Delete(w.ctx, set); err != nil {
		t.Fatal(err)
	}
	w.eventually(30*time.Second, "every unit removed", func() string {
		if u := h.Units(); len(u) > 0 {
			return fmt.Sprintf("units left: %+v", u)
		}
		return ""
	})
}

// A unit whose exporter fails is reported and replaced; one whose exporter exits cleanly
// after its lease (ExitAndReplace) is recycled, not counted as a failure.
func TestHostedUnitsRecycleAndRecover(t *testing.T) {
	reg := prometheus.NewRegistry()
	w, h := hostedWorld(t, 0, 3, 2, exporterset.WithMetrics(reg))
	w.waitHealthy("lab", 2, 60*time.Second)

	victim := runningUnits(h)[0]
	if err := h.Exit(w.ctx, w.ns, victim, 3); err != nil {
		t.Fatal(err)
	}
	w.eventually(30*time.Second, "the failed unit counted and reported", func() string {
		if n := failuresSeen(t, reg, vtv1alpha1.ReasonExternalTargetFailed); n != 1 {
			return fmt.Sprintf("%v ExternalTargetFailed failures counted", n)
		}
		if notes := w.eventNotes("lab", string(vtv1alpha1.ReasonExternalTargetFailed)); len(notes) != 1 || !strings.Contains(notes[0], "exited with status 3") {
			return fmt.Sprintf("ExternalTargetFailed events %q", notes)
		}
		return ""
	})
	w.eventually(60*time.Second, "the failed instance replaced and its unit removed", func() string {
		if slices.ContainsFunc(h.Units(), func(u fakeprov.Unit) bool { return u.Instance == victim }) {
			return "the failed unit is still there"
		}
		if n := len(runningUnits(h)); n < 2 {
			return fmt.Sprintf("%d units running", n)
		}
		return ""
	})
	w.waitHealthy("lab", 2, 60*time.Second)

	l := w.lease("l1", "lab")
	served := w.waitAssigned(l)
	w.release(l)
	w.waitEnded(l)
	before := failuresSeen(t, reg, "")
	if err := h.Exit(w.ctx, w.ns, served, 0); err != nil { // the exporter exits after its lease
		t.Fatal(err)
	}
	w.eventually(60*time.Second, "the used instance recycled and its unit removed", func() string {
		if getExporter(t, w, served) != nil {
			return served + " is still there"
		}
		if slices.ContainsFunc(h.Units(), func(u fakeprov.Unit) bool { return u.Instance == served }) {
			return "its unit is still there"
		}
		return ""
	})
	w.waitHealthy("lab", 2, 60*time.Second)
	if n := failuresSeen(t, reg, ""); n != before {
		t.Errorf("a clean exit after a lease counted as a failure: %v instance failures, want the %v of before", n, before)
	}
}

// failuresSeen is the set lab's exporterset_instance_failures_total for reason, summed over
// every reason for "".
func failuresSeen(t *testing.T, reg *prometheus.Registry, reason vtv1alpha1.ConditionReason) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range families {
		if f.GetName() != "exporterset_instance_failures_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["exporterset"] == "lab" && (reason == "" || labels["reason"] == string(reason)) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

// An on-demand hosted set (minAvailableReplicas 0) rests with one Exporter and no unit, so a
// Lease waits rather than ending Unsatisfiable; the waiting Lease starts a unit, and after
// the lease the unit goes, whether its exporter stays up (rested after the cooldown) or
// exits (recycled), and the Exporter stays for the next Lease.
func TestHostedOnDemandFromRest(t *testing.T) {
	w, h := hostedWorld(t, 0, 2, 0)
	w.waitAtRest("lab")
	if u := h.Units(); len(u) != 0 {
		t.Fatalf("units at rest: %+v", u)
	}
	for i, exits := range []bool{false, true} {
		l := w.lease(fmt.Sprintf("l%d", i), "lab")
		served := w.waitServed(l)
		if got := runningUnits(h); !slices.Equal(got, []string{served}) {
			t.Fatalf("lease %d: units running %v, want the one of %s", i, got, served)
		}
		w.release(l)
		w.waitEnded(l)
		if exits {
			if err := h.Exit(w.ctx, w.ns, served, 0); err != nil {
				t.Fatal(err)
			}
		}
		w.waitAtRest("lab")
		w.eventually(30*time.Second, "no unit left", func() string {
			if u := h.Units(); len(u) != 0 {
				return fmt.Sprintf("units: %+v", u)
			}
			return ""
		})
	}
}

// A unit that cannot be created yet (no free slot, a host that does not answer) is retried,
// and the set says why its instances wait: the provisioner's own words.
func TestHostedCreateWaitIsReported(t *testing.T) {
	w := newWorld(t)
	h := fakeprov.NewHosted()
	h.OnStart = func(ctx context.Context, ns, name string) error { return w.sim.ConnectFromOutside(ctx, ns, name) }
	h.FailCreates(provisioner.Transient(errors.New("fake-lab: no free slot on any lab host")))
	registry := w.fake.Registry()
	if err := h.Register(registry); err != nil {
		t.Fatal(err)
	}
	w.controllerServing(env.Config, registry)
	w.class("lab", func(c *vtv1alpha1.VirtualTargetClass) { c.Spec.Provisioner = fakeprov.HostedName })
	w.set("lab", 0, 2, 1, func(s *vtv1alpha1.ExporterSet) { s.Spec.VirtualTargetClassName = "lab" })
	w.waitStatus("lab", 30*time.Second, "the wait reported", func(s vtv1alpha1.ExporterSetStatus) bool {
		a := availableCond(s)
		return a != nil && a.Status == metav1.ConditionFalse && strings.Contains(a.Message, "no free slot on any lab host")
	})
	h.FailCreates(nil)
	w.waitHealthy("lab", 1, 60*time.Second)
}
