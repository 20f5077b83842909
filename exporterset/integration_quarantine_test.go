package exporterset_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/internal/tuning"
)

// hookFailedMsg is upstream's message for an afterLease hook that exited 1 under onFailure
// endLease.
const hookFailedMsg = "afterLease hook failed (on_failure=endLease): Hook failed with exit code 1"

// hookClass makes the fake class with an afterLease hook running script with onFailure.
func (w *world) hookClass(script, onFailure string) {
	w.class("fake", func(c *vtv1alpha1.VirtualTargetClass) {
		c.Spec.Parameters = &apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf(`{"hooks": {"afterLease": {"script": %q, "onFailure": %q, "timeout": 10}}}`, script, onFailure))}
	})
}

func reuseSet(ttl string) func(*vtv1alpha1.ExporterSet) {
	return func(s *vtv1alpha1.ExporterSet) {
		s.Spec.RecycleStrategy = vtv1alpha1.RecycleInPlaceReuse
		if ttl != "" {
			s.Annotations = map[string]string{exporterset.AnnotationQuarantineTTL: ttl}
		}
	}
}

// releaseAndWatch releases the lease, after which the instance's afterLease hook runs, and
// watches the Exporter and the set: it returns when the lease was released, how long the set
// took to disable and mark the instance, and until the set's status showed it disabled with
// the warm buffer (buffer) held (0: not within 2 s, or 5 s for the buffer).
func (w *world) releaseAndWatch(l *jumpstarterv1alpha1.Lease, exporter string, buffer int32) (at time.Time, disabled, restored time.Duration) {
	w.t.Helper()
	w.release(l)
	at = time.Now()
	for d := time.Duration(0); d < 5*time.Second && (disabled == 0 || restored == 0); d = time.Since(at) {
		if e := getExporter(w.t, w, exporter); disabled == 0 && d < 2*time.Second && e != nil && !e.IsEnabled() && e.Annotations[pool.AnnotationQuarantined] != "" {
			disabled = d
		}
		if st := w.getSet("pool").Status; restored == 0 && st.ExportersDisabled >= 1 && st.AvailableReplicas >= buffer {
			restored = d
		}
		time.Sleep(20 * time.Millisecond)
	}
	w.waitEnded(l)
	return at, disabled, restored
}

func (w *world) waitEnded(l *jumpstarterv1alpha1.Lease) {
	w.t.Helper()
	w.eventually(20*time.Second, "lease "+l.Name+" ended", func() string {
		if err := w.c.Get(w.ctx, client.ObjectKeyFromObject(l), l); err != nil {
			return err.Error()
		}
		if !l.Status.Ended {
			return "not ended"
		}
		return ""
	})
}

// waitQuarantined waits until the Exporter is disabled and marked, and returns when that
// was first seen.
func (w *world) waitQuarantined(name string, timeout time.Duration) (*jumpstarterv1alpha1.Exporter, time.Time) {
	w.t.Helper()
	var e *jumpstarterv1alpha1.Exporter
	w.eventually(timeout, name+" quarantined", func() string {
		e = getExporter(w.t, w, name)
		switch {
		case e == nil:
			return "gone"
		case e.IsEnabled() || e.Annotations[pool.AnnotationQuarantined] == "":
			return fmt.Sprintf("enabled=%t annotations=%v status=%s", e.IsEnabled(), e.Annotations, e.Status.ExporterStatusValue)
		}
		return ""
	})
	return e, time.Now()
}

func podsOf(w *world, exporter string) []corev1.Pod {
	w.t.Helper()
	var pods corev1.PodList
	if err := w.c.List(w.ctx, &pods, client.InNamespace(w.ns)); err != nil {
		w.t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		for _, ref := range p.OwnerReferences {
			if ref.Kind == "Exporter" && ref.Name == exporter {
				out = append(out, p)
			}
		}
	}
	return out
}

// A failing afterLease hook under InPlaceReuse, buffer 2, ceiling 4: the instance is
// disabled and marked within 2 s, leases never land on it again, the buffer is back within
// 5 s, and the instance and its Pod are kept until the TTL, then removed.
func TestQuarantineFailedAfterLeaseHook(t *testing.T) {
	const ttl = 15 * time.Second
	w := newWorld(t)
	// The hook fails after the lease "first" only (exit 1), so that the 20 leases after it
	// can show where they land; every instance failing is the breaker's test.
	w.hookClass(`test "$LEASE_NAME" != first`, "endLease")
	reg := prometheus.NewRegistry()
	w.controller(env.Config, exporterset.WithMetrics(reg))
	ceiling := w.watchCeiling("pool", 4)
	w.set("pool", 0, 4, 2, reuseSet(ttl.String()))
	w.waitStatus("pool", 30*time.Second, "2 available", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas == 2 })

	l := w.lease("first", "pool")
	bad := w.waitAssigned(l)
	w.waitStatus("pool", 10*time.Second, "buffer refilled while leased", func(s vtv1alpha1.ExporterSetStatus) bool {
		return s.LeasedReplicas == 1 && s.AvailableReplicas == 2
	})
	low := w.sampleAvailability("pool")
	_, took, restored := w.releaseAndWatch(l, bad, 2)
	lowest, _ := low.finish()
	if took == 0 {
		t.Fatalf("%s not disabled and marked within 2s of its lease's end", bad)
	}
	if restored == 0 {
		t.Fatalf("the set's status did not show the instance disabled with a buffer of 2 within 5s")
	}
	t.Logf("lease end (failed hook) to disabled and marked: %v; to a status with it disabled and the buffer of 2: %v (lowest availableReplicas sampled: %d)",
		took.Round(time.Millisecond), restored.Round(time.Millisecond), lowest)
	e, _ := w.waitQuarantined(bad, time.Second)
	mark := e.Annotations[pool.AnnotationQuarantined]
	at, err := time.Parse(time.RFC3339, mark[strings.LastIndex(mark, " ")+1:])
	if err != nil || !strings.HasPrefix(mark, string(jumpstarterv1alpha1.ExporterStatusAfterLeaseHookFailed)+" at ") {
		t.Fatalf("mark %q: want the reason and an RFC 3339 time (%v)", mark, err)
	}
	w.eventually(5*time.Second, "InstanceQuarantined event", func() string {
		for _, n := range w.eventNotes("pool", "InstanceQuarantined") {
			if strings.Contains(n, bad) && strings.Contains(n, hookFailedMsg) {
				return ""
			}
		}
		return fmt.Sprintf("events %v", w.eventNotes("pool", "InstanceQuarantined"))
	})
	st := w.getSet("pool").Status
	if c := conditionMessage(st, vtv1alpha1.ConditionDegraded); !strings.Contains(c, bad) || !strings.Contains(c, "quarantined for inspection") {
		t.Fatalf("Degraded should name the quarantined instance: %s", summary(st))
	}

	// 20 more leases, one after another: none lands on it, and it is kept with its Pod.
	pod := podsOf(w, bad)
	if len(pod) != 1 {
		t.Fatalf("quarantined instance has %d Pods, want its one Pod kept", len(pod))
	}
	for i := 0; i < 20; i++ {
		l := w.lease(fmt.Sprint("next-", i), "pool")
		if got := w.waitAssigned(l); got == bad {
			t.Fatalf("lease %s landed on the quarantined instance %s", l.Name, bad)
		}
		w.release(l)
		w.waitEnded(l)
		if time.Since(at) < ttl-time.Second {
			if getExporter(t, w, bad) == nil || len(podsOf(w, bad)) != 1 || podsOf(w, bad)[0].UID != pod[0].UID {
				t.Fatalf("quarantined instance or its Pod removed %v after quarantine, before its TTL %v", time.Since(at), ttl)
			}
		}
	}
	// Kept until the TTL, then removed (after the grace, whole seconds rounded up).
	for time.Since(at) < ttl-time.Second {
		if getExporter(t, w, bad) == nil {
			t.Fatalf("quarantined instance removed %v after quarantine, before its TTL %v", time.Since(at), ttl)
		}
		time.Sleep(100 * time.Millisecond)
	}
	w.eventually(time.Until(at.Add(ttl+5*time.Second)), "quarantined instance removed after its TTL", func() string {
		if getExporter(t, w, bad) != nil {
			return "still there"
		}
		return ""
	})
	w.waitStatus("pool", 10*time.Second, "buffer of 2 after the removal", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas >= 2 })
	ceiling.check(t, 4, 3)
	if got := retirements(t, reg, w.ns, "pool", string(pool.RetiredQuarantined)); got != 1 {
		t.Errorf("exporterset_retirements_total{reason=quarantined} = %v after the removal, want 1", got)
	}
}

// Three quarantines in a row open the circuit breaker: Degraded ReuseCheckFailing quoting
// the last failure, replacements back off. An instance that serves a lease and comes back
// Available closes it.
func TestQuarantineCircuitBreaker(t *testing.T) {
	w := newWorld(t)
	// Every instance's hook fails, but for the lease "good" (the passing check at the end).
	w.hookClass(`test "$LEASE_NAME" = good`, "endLease")
	w.controller(env.Config, exporterset.WithTuning(tuning.Knobs{BackoffBase: 20 * time.Second, BackoffLimit: time.Minute}))
	ceiling := w.watchCeiling("pool", 4)
	w.set("pool", 0, 4, 1, reuseSet(""))
	w.waitStatus("pool", 30*time.Second, "1 available", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas == 1 })

	var bad string
	for i := 0; i < 3; i++ {
		st := w.getSet("pool").Status
		if c := condition(st, vtv1alpha1.ConditionDegraded); c != nil && strings.Contains(*c, string(vtv1alpha1.ReasonReuseCheckFailing)) {
			t.Fatalf("breaker open after %d quarantines: %s", i, summary(st))
		}
		w.waitStatus("pool", 30*time.Second, "an available instance", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas >= 1 })
		l := w.lease(fmt.Sprint("l-", i), "pool")
		bad = w.waitAssigned(l)
		if _, took, _ := w.releaseAndWatch(l, bad, 1); took == 0 {
			t.Fatalf("%s not quarantined within 2s", bad)
		}
	}
	last := "instance " + bad + ": AfterLeaseHookFailed: " + hookFailedMsg
	st := w.waitStatus("pool", 5*time.Second, "Degraded ReuseCheckFailing", func(s vtv1alpha1.ExporterSetStatus) bool {
		c := condition(s, vtv1alpha1.ConditionDegraded)
		return c != nil && strings.Contains(*c, string(vtv1alpha1.ReasonReuseCheckFailing))
	})
	if c := conditionMessage(st, vtv1alpha1.ConditionDegraded); !strings.Contains(c, last) || !strings.Contains(c, "replacements back off until") {
		t.Fatalf("Degraded should quote the last failure %q and say the replacements back off: %s", last, c)
	}
	if c := condition(st, vtv1alpha1.ConditionProgressing); c == nil || *c != "False/"+string(vtv1alpha1.ReasonBackingOff) ||
		!strings.Contains(conditionMessage(st, vtv1alpha1.ConditionProgressing), "in a row failed the check") {
		t.Fatalf("Progressing should say the breaker holds creates: %s", summary(st))
	}
	// A passing check: an instance serves a lease and comes back Available.
	w.waitStatus("pool", 30*time.Second, "an available instance", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas >= 1 })
	l := w.lease("good", "pool")
	w.waitAssigned(l)
	w.release(l)
	w.waitStatus("pool", 30*time.Second, "breaker closed", func(s vtv1alpha1.ExporterSetStatus) bool {
		c := condition(s, vtv1alpha1.ConditionDegraded)
		return c != nil && !strings.Contains(*c, string(vtv1alpha1.ReasonReuseCheckFailing))
	})
	ceiling.check(t, 4, 4)
}

// onFailure exit: the exporter reports the failure and exits 1. The instance is quarantined
// and kept; its failed Pod is not restarted. Without a hook, an exporter exiting with an
// error after a lease is quarantined too (InPlaceReuse restarted it before).
func TestQuarantineExporterExitsAfterLease(t *testing.T) {
	for _, hook := range []bool{true, false} {
		t.Run(fmt.Sprintf("hook=%t", hook), func(t *testing.T) {
			w := newWorld(t)
			if hook {
				w.hookClass("exit 1", "exit")
			} else {
				w.class("fake")
			}
			w.controller(env.Config)
			w.set("pool", 0, 4, 1, reuseSet(""))
			w.waitStatus("pool", 30*time.Second, "1 available", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas == 1 })
			l := w.lease("l", "pool")
			bad := w.waitAssigned(l)
			pod := podsOf(w, bad)[0]
			w.release(l)
			w.waitEnded(l)
			want := "ExitedAfterLease"
			if hook {
				want = string(jumpstarterv1alpha1.ExporterStatusAfterLeaseHookFailed)
				w.eventually(10*time.Second, "the exporter exited 1", func() string {
					var p corev1.Pod
					if err := w.c.Get(w.ctx, client.ObjectKeyFromObject(&pod), &p); err != nil {
						return err.Error()
					}
					if p.Status.Phase != corev1.PodFailed {
						return string(p.Status.Phase)
					}
					return ""
				})
			} else {
				// The exporter (or its runtime) crashes once the lease is over.
				if err := w.sim.FailPod(w.ctx, w.ns, pod.Name); err != nil {
					t.Fatal(err)
				}
			}
			e, _ := w.waitQuarantined(bad, 5*time.Second)
			if m := e.Annotations[pool.AnnotationQuarantined]; !strings.HasPrefix(m, want+" at ") {
				t.Fatalf("mark %q, want reason %s", m, want)
			}
			if hook {
				w.eventually(5*time.Second, "InstanceQuarantined event quoting on_failure=exit", func() string {
					for _, n := range w.eventNotes("pool", "InstanceQuarantined") {
						if strings.Contains(n, bad) && strings.Contains(n, "on_failure=exit, shutting down") {
							return ""
						}
					}
					return fmt.Sprintf("events %v", w.eventNotes("pool", "InstanceQuarantined"))
				})
			}
			w.waitStatus("pool", 10*time.Second, "buffer back", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas >= 1 })
			// Not crash-looped: the failed Pod stays, none replaces it.
			time.Sleep(3 * time.Second)
			pods := podsOf(w, bad)
			if len(pods) != 1 || pods[0].UID != pod.UID || pods[0].Status.Phase != corev1.PodFailed {
				t.Fatalf("quarantined instance's Pods %d (want its one failed Pod %s kept)", len(pods), pod.Name)
			}
			for _, n := range w.eventNotes("pool", "PodRestarted") {
				if strings.Contains(n, bad) {
					t.Fatalf("the quarantined instance's Pod was restarted: %s", n)
				}
			}

			// A person takes it back: enabled again, it is not quarantined again for the
			// exit it was quarantined for. It is then a failed instance like any other: its
			// Pod is restarted, or, the pool holding its replacement, it is the surplus the
			// set scales down.
			e = getExporter(t, w, bad)
			mark := e.Annotations[pool.AnnotationQuarantined]
			w.edit(e, func() { e.Spec.Enabled = ptr.To(true) })
			w.eventually(15*time.Second, "a fresh Pod, or the instance retired", func() string {
				e := getExporter(t, w, bad)
				if e == nil || e.Annotations[pool.AnnotationRetiring] != "" {
					return ""
				}
				if !e.IsEnabled() || e.Annotations[pool.AnnotationQuarantined] != mark {
					t.Fatalf("quarantined again after a person enabled it: enabled=%v mark %q (was %q)", e.IsEnabled(), e.Annotations[pool.AnnotationQuarantined], mark)
				}
				for _, p := range podsOf(w, bad) {
					if p.UID != pod.UID && p.DeletionTimestamp == nil {
						return ""
					}
				}
				return "still the failed Pod"
			})
			quarantined := 0
			for _, n := range w.eventNotes("pool", "InstanceQuarantined") {
				if strings.Contains(n, bad) {
					quarantined++
				}
			}
			if quarantined != 1 {
				t.Errorf("%d InstanceQuarantined events name %s, want one", quarantined, bad)
			}
		})
	}
}

// conditionMessage is the message of the set's condition typ, "" without one.
func conditionMessage(st vtv1alpha1.ExporterSetStatus, typ string) string {
	for _, c := range st.Conditions {
		if c.Type == typ {
			return c.Message
		}
	}
	return ""
}

// A failing beforeLease hook (onFailure endLease) is reported while the lease holds the
// instance: it is quarantined then, the lease ends, and it is kept, counted against the
// ceiling, not towards the buffer.
func TestQuarantineFailedBeforeLeaseHook(t *testing.T) {
	w := newWorld(t)
	w.class("fake", func(c *vtv1alpha1.VirtualTargetClass) {
		c.Spec.Parameters = &apiextensionsv1.JSON{Raw: []byte(`{"hooks": {"beforeLease": {"script": "test \"$LEASE_NAME\" != first", "onFailure": "endLease"}}}`)}
	})
	w.controller(env.Config)
	// An unreadable policy annotation keeps its default (1 kept) and is said once.
	w.set("pool", 0, 3, 1, reuseSet(""), func(s *vtv1alpha1.ExporterSet) {
		s.Annotations = map[string]string{exporterset.AnnotationMaxQuarantined: "many"}
	})
	w.waitStatus("pool", 30*time.Second, "1 available", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas == 1 })
	l := w.lease("first", "pool")
	bad := w.waitAssigned(l)
	e, _ := w.waitQuarantined(bad, 2*time.Second)
	if m := e.Annotations[pool.AnnotationQuarantined]; !strings.HasPrefix(m, string(jumpstarterv1alpha1.ExporterStatusBeforeLeaseHookFailed)+" at ") {
		t.Fatalf("mark %q, want BeforeLeaseHookFailed", m)
	}
	w.waitEnded(l) // the exporter has it released
	w.waitStatus("pool", 10*time.Second, "buffer of 1 beside the quarantined instance", func(s vtv1alpha1.ExporterSetStatus) bool {
		return s.AvailableReplicas >= 1 && s.ExportersDisabled == 1 && s.LeasedReplicas == 0
	})
	l2 := w.lease("second", "pool")
	if got := w.waitAssigned(l2); got == bad {
		t.Fatalf("lease second landed on the quarantined instance %s", bad)
	}
	if getExporter(t, w, bad) == nil {
		t.Fatal("quarantined instance removed before its TTL")
	}
	note := `annotation virtualtarget.jumpstarter.dev/max-quarantined="many" on the ExporterSet: not a count`
	if c := conditionMessage(w.getSet("pool").Status, vtv1alpha1.ConditionDegraded); !strings.Contains(c, note) {
		t.Errorf("Degraded should name the unreadable annotation: %s", c)
	}
	if n := w.eventCount("pool", "InvalidAnnotation"); n != 1 {
		t.Errorf("%d InvalidAnnotation events after many passes, want 1: %v", n, w.eventNotes("pool", "InvalidAnnotation"))
	}
}

// At the ceiling, a lease that waits gets the quarantined instance's place: it is removed
// (after its grace) and a fresh instance serves the lease. The ceiling holds throughout.
func TestQuarantineMakesRoomForWaitingLease(t *testing.T) {
	w := newWorld(t)
	w.hookClass(`test "$LEASE_NAME" != first`, "endLease")
	w.controller(env.Config)
	ceiling := w.watchCeiling("pool", 2)
	w.set("pool", 0, 2, 1, reuseSet(""))
	w.waitStatus("pool", 30*time.Second, "1 available", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas == 1 })
	l := w.lease("first", "pool")
	bad := w.waitAssigned(l)
	if _, took, _ := w.releaseAndWatch(l, bad, 1); took == 0 {
		t.Fatalf("%s not quarantined within 2s", bad)
	}
	busy := w.lease("busy", "pool")
	w.waitAssigned(busy)
	waiting := w.lease("waiting", "pool") // the ceiling (2) is full: busy + the quarantined one
	if got := w.waitAssigned(waiting); got == bad {
		t.Fatalf("lease waiting landed on the quarantined instance %s", bad)
	}
	if getExporter(t, w, bad) != nil {
		t.Fatalf("quarantined instance %s still there after a waiting lease needed its place", bad)
	}
	ceiling.check(t, 2, 3)
}
