package exporterset_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/exporterset/pool"
)

func idleAge(d string) func(*vtv1alpha1.ExporterSet) {
	return func(s *vtv1alpha1.ExporterSet) {
		s.Annotations = map[string]string{exporterset.AnnotationMaxIdleAge: d}
	}
}

// max-idle-age 20s on a warm buffer of 3, watched for 90 s: every idle instance is replaced
// by surge at least 3 times, availableReplicas (sampled every 100 ms) never drops below 3,
// the set never exceeds maxReplicas, and the instance a lease holds throughout stays.
func TestMaxIdleAgeReplacesIdleInstancesBySurge(t *testing.T) {
	if testing.Short() {
		t.Skip("90 s")
	}
	w := newWorld(t)
	w.class("fake")
	reg := prometheus.NewRegistry()
	w.controller(env.Config, exporterset.WithMetrics(reg))
	const maxR = 6
	ceiling := w.watchCeiling("pool", maxR)
	w.set("pool", 0, maxR, 3, idleAge("20s"))
	w.waitHealthy("pool", 3, 30*time.Second)
	held := w.lease("held", "pool")
	holder := w.waitAssigned(held)
	w.waitHealthy("pool", 3, 30*time.Second) // the buffer refilled beside the lease

	start := time.Now()
	sampler := w.sampleAvailability("pool")
	dips := w.recordDips("pool", 3)
	seen := map[string]time.Time{} // every instance of the set, from when it was first seen
	for time.Since(start) < 90*time.Second {
		for _, e := range w.exporters("pool") {
			if _, ok := seen[e.Name]; !ok {
				seen[e.Name] = time.Now()
			}
		}
		if getExporter(t, w, holder) == nil {
			t.Fatalf("%s, which a lease holds, was removed", holder)
		}
		time.Sleep(500 * time.Millisecond)
	}
	lowest, samples := sampler.finish()
	for _, d := range dips.finish() {
		t.Log(d)
	}
	ceiling.check(t, maxR, 4)

	replaced := retirements(t, reg, w.ns, "pool", "idle-age")
	t.Logf("in 90 s: %v idle-age retirements, %d instances seen, lowest availableReplicas %d (%d samples)", replaced, len(seen), lowest, samples)
	if lowest < 3 {
		t.Errorf("availableReplicas dropped to %d (buffer 3; %d samples)", lowest, samples)
	}
	if samples < 300 {
		t.Errorf("only %d samples of availableReplicas in 90 s", samples)
	}
	if replaced < 9 {
		t.Errorf("%v idle-age retirements in 90 s, want at least 9 (each of 3 idle instances replaced 3 times)", replaced)
	}
	for _, reason := range []string{"scaled-down", "failed", "released"} {
		if n := retirements(t, reg, w.ns, "pool", reason); n != 0 {
			t.Errorf("%v retirements for %s: the idle roll must not show as another reason", n, reason)
		}
	}
	e := getExporter(t, w, holder)
	if e == nil || e.Status.LeaseRef == nil || e.Status.LeaseRef.Name != "held" || !e.IsEnabled() {
		t.Errorf("the held instance %s: %+v", holder, e)
	}
	if err := w.c.Get(w.ctx, client.ObjectKeyFromObject(held), held); err != nil || held.Status.Ended {
		t.Errorf("the held lease ended (%v)", err)
	}
}

// At the ceiling no replacement fits beside an idle instance past its age: with only the
// buffer available, it waits rather than leave the buffer short. Once the ceiling allows a
// surge, the roll goes on.
func TestMaxIdleAgeWaitsAtTheCeiling(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	reg := prometheus.NewRegistry()
	w.controller(env.Config, exporterset.WithMetrics(reg))
	set := w.set("pool", 0, 2, 2, idleAge("2s"))
	w.waitHealthy("pool", 2, 30*time.Second)
	first := map[string]bool{}
	for _, e := range w.exporters("pool") {
		first[e.Name] = true
	}

	sampler := w.sampleAvailability("pool")
	time.Sleep(6 * time.Second) // three times the idle age: both are overdue
	if n := retirements(t, reg, w.ns, "pool", "idle-age"); n != 0 {
		t.Fatalf("%v idle-age retirements at the ceiling with only the buffer available", n)
	}
	if got := len(w.exporters("pool")); got != 2 {
		t.Fatalf("%d instances at maxReplicas 2", got)
	}
	lowest, samples := sampler.finish()
	if lowest < 2 {
		t.Errorf("availableReplicas dropped to %d at the ceiling (%d samples)", lowest, samples)
	}

	w.edit(set, func() { set.Spec.MaxReplicas = ptr.To(int32(3)) })
	w.eventually(40*time.Second, "both first instances replaced", func() string {
		for _, e := range w.exporters("pool") {
			if first[e.Name] {
				return fmt.Sprintf("%s still there; %s", e.Name, summary(w.getSet("pool").Status))
			}
		}
		return ""
	})
	if n := retirements(t, reg, w.ns, "pool", "idle-age"); n < 2 {
		t.Errorf("%v idle-age retirements, want 2", n)
	}
}

// Under InPlaceReuse a lease restarts the idle clock: an instance ready for longer than
// max-idle-age, but whose lease ended a moment ago, is not rolled until it has been idle that
// long since the lease's end (idle-since, written by the set), and then it is.
func TestMaxIdleAgeCountsFromTheLastLease(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	w.set("pool", 0, 3, 1, inPlaceReuse(map[string]string{exporterset.AnnotationMaxIdleAge: "6s"}))
	w.waitHealthy("pool", 1, 30*time.Second)
	time.Sleep(3 * time.Second)
	l := w.lease("l", "pool")
	a := w.waitAssigned(l)
	time.Sleep(5 * time.Second) // a has been ready for 8 s, longer than 6s+10 %
	w.release(l)
	w.eventually(10*time.Second, "the lease's end recorded on "+a, func() string {
		e := getExporter(t, w, a)
		if e == nil {
			return "gone"
		}
		if e.Annotations[pool.AnnotationIdleSince] == "" || e.Status.LeaseRef != nil {
			return fmt.Sprintf("annotations %v, leaseRef %v", e.Annotations, e.Status.LeaseRef)
		}
		return ""
	})
	time.Sleep(3 * time.Second)
	if e := getExporter(t, w, a); e == nil || !e.IsEnabled() {
		t.Fatalf("%s was retired within 3 s of its lease's end (max-idle-age 6s): %+v", a, e)
	}
	w.eventually(20*time.Second, a+" rolled for its idle age", func() string {
		if getExporter(t, w, a) != nil {
			return summary(w.getSet("pool").Status)
		}
		return ""
	})
	w.waitHealthy("pool", 1, 10*time.Second)
}

// dipRecorder notes, every 100 ms, each status with availableReplicas below floor and the
// set's Exporters as the API server shows them right after: what a failure message needs.
type dipRecorder struct {
	stop, done chan struct{}
	dips       []string
	ready      map[string]bool // each Exporter as last seen
}

func (w *world) recordDips(set string, floor int32) *dipRecorder {
	d := &dipRecorder{stop: make(chan struct{}), done: make(chan struct{}), ready: map[string]bool{}}
	go func() {
		defer close(d.done)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-d.stop:
				return
			case <-tick.C:
			}
			var list jumpstarterv1alpha1.ExporterList
			if err := w.c.List(w.ctx, &list, client.InNamespace(w.ns), client.MatchingLabels{pool.LabelSet: set}); err != nil {
				continue
			}
			for i := range list.Items {
				e := &list.Items[i]
				in := &pool.Instance{Exporter: e}
				if d.ready[e.Name] && !in.Ready() {
					d.dips = append(d.dips, fmt.Sprintf("%s %s was ready and is not: %+v", time.Now().Format("15:04:05.000"), e.Name, e.Status.Conditions))
				}
				d.ready[e.Name] = in.Ready()
			}
			var got vtv1alpha1.ExporterSet
			if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: set}, &got); err != nil || got.Status.AvailableReplicas >= floor {
				continue
			}
			line := fmt.Sprintf("%s available %d:", time.Now().Format("15:04:05.000"), got.Status.AvailableReplicas)
			for i := range list.Items {
				e := &list.Items[i]
				in := &pool.Instance{Exporter: e}
				line += fmt.Sprintf(" %s(created=%s ready=%v enabled=%v leased=%v retiring=%q idle-since=%q", e.Name, e.CreationTimestamp.Format("15:04:05"), in.Ready(), in.Enabled(), in.Leased(),
					e.Annotations[pool.AnnotationRetiring], e.Annotations[pool.AnnotationIdleSince])
				if !in.Ready() {
					for _, c := range e.Status.Conditions {
						line += fmt.Sprintf(" %s=%s %s %q at %s", c.Type, c.Status, c.Reason, c.Message, c.LastTransitionTime.Format("15:04:05"))
					}
				}
				line += ")"
			}
			d.dips = append(d.dips, line)
		}
	}()
	return d
}

func (d *dipRecorder) finish() []string {
	close(d.stop)
	<-d.done
	return d.dips
}
