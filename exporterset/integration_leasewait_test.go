package exporterset_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// The lease-wait rule on a real API server (pool/leasewait.go): the Jumpstarter core ends a
// Lease at once when no enabled Exporter matches it, so a set with room keeps one at every
// moment, counted from a watch.

// An on-demand set (minAvailableReplicas 0) rests with one Exporter and no Pod; Leases taken
// one after another, then three at once, are all served, and it is back at rest after each.
func TestOnDemandServesLeasesFromRest(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	w.set("od", 0, 3, 0)
	w.waitAtRest("od")
	enabled := w.watchEnabled("od")
	cw := w.watchCeiling("od", 3)
	var cold []time.Duration // lease created -> assigned, from rest (polled every 50 ms)
	for i := range 3 {
		start := time.Now()
		l := w.lease(fmt.Sprintf("one-%d", i), "od")
		w.waitServed(l)
		cold = append(cold, time.Since(start).Round(10*time.Millisecond))
		w.release(l)
		w.waitAtRest("od")
	}
	t.Logf("on demand, lease created -> assigned from rest: %v", cold)
	var burst []*jumpstarterv1alpha1.Lease
	for i := range 3 {
		burst = append(burst, w.lease(fmt.Sprintf("burst-%d", i), "od"))
	}
	for _, l := range burst {
		w.waitServed(l)
	}
	for _, l := range burst {
		w.release(l)
	}
	w.waitAtRest("od")
	enabled.check(t)
	cw.check(t, 3, 4)
	if c := apimeta.FindStatusCondition(w.getSet("od").Status.Conditions, vtv1alpha1.ConditionLeasesWait); c == nil || c.Status != "True" {
		t.Errorf("LeasesWait at rest: %+v, want True", c)
	}
}

// At maxReplicas 1 each user takes a Lease the moment the previous one is released: none
// ends Unsatisfiable, the ceiling holds, and each lease gets a fresh Pod (ExitAndReplace).
func TestBackToBackLeasesAtCeilingOne(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	w.set("one", 0, 1, 1)
	w.waitStatus("one", 30*time.Second, "1 available", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas == 1 })
	enabled := w.watchEnabled("one")
	cw := w.watchCeiling("one", 1)
	pods := map[types.UID]bool{}
	var exporter string
	var last types.UID
	for i := range 8 {
		l := w.lease(fmt.Sprintf("user-%d", i), "one")
		exporter = w.waitServed(l)
		w.eventually(20*time.Second, "the lease holder's pod", func() string {
			for _, p := range w.podsOf("one") {
				if p.Labels != nil && p.Name == exporter && p.Status.Phase == corev1.PodRunning {
					if pods[p.UID] && i > 0 {
						return fmt.Sprintf("lease %d is served by the Pod of an earlier lease", i)
					}
					pods[p.UID] = true
					last = p.UID
					return ""
				}
			}
			return "no running pod"
		})
		w.release(l)
	}
	// The renewal names the exited Pod it answered before asking for its restart, so that a
	// later pass reading a lagging cache does not remove the instance as exited (renew.go).
	w.eventually(20*time.Second, "the renewal's mark on the last lease's exited Pod", func() string {
		e := getExporter(t, w, exporter)
		if e == nil {
			return "exporter " + exporter + " gone"
		}
		if e.Annotations[pool.AnnotationRenewedPod] != string(last) {
			return fmt.Sprintf("exporter %s annotations %v, want %s=%s", exporter, e.Annotations, pool.AnnotationRenewedPod, last)
		}
		return ""
	})
	enabled.check(t)
	cw.check(t, 1, 1)
}

// atRest reports a set holding one Exporter, at rest without a Pod: an on-demand set idle.
func atRest(s vtv1alpha1.ExporterSetStatus) bool {
	return s.Replicas == 1 && s.RestingReplicas == 1 && s.PodsPending+s.PodsRunning+s.PodsFailed+s.PodsUnknown == 0
}

// waitAtRest waits until the set holds exactly one enabled Exporter, at rest, and no Pod.
func (w *world) waitAtRest(set string) {
	w.t.Helper()
	w.eventually(60*time.Second, set+" at rest", func() string {
		st := w.getSet(set).Status
		if n := len(w.podsOf(set)); n != 0 || st.Replicas != 1 || st.RestingReplicas != 1 {
			return fmt.Sprintf("%d pods, %s, resting %d", n, summary(st), st.RestingReplicas)
		}
		return ""
	})
}

// podUID is the UID of the instance's Pod (named as its Exporter).
func (w *world) podUID(name string) types.UID {
	w.t.Helper()
	var pod corev1.Pod
	if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &pod); err != nil {
		w.t.Fatal(err)
	}
	return pod.UID
}

// waitFreshPod waits until the instance's Pod is another than the one of UID old.
func (w *world) waitFreshPod(name string, old types.UID) {
	w.t.Helper()
	w.eventually(30*time.Second, "a fresh Pod for "+name, func() string {
		var now corev1.Pod
		if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &now); err != nil || now.UID == old {
			return "no fresh Pod yet"
		}
		return ""
	})
}

// podsOf lists the set's Pods.
func (w *world) podsOf(set string) []corev1.Pod {
	w.t.Helper()
	var pods corev1.PodList
	if err := w.c.List(w.ctx, &pods, client.InNamespace(w.ns), client.MatchingLabels{pool.LabelSet: set}); err != nil {
		w.t.Fatal(err)
	}
	return pods.Items
}

// waitServed waits until the lease is assigned and fails at once if it ends unassigned
// (Unsatisfiable), quoting the Jumpstarter controller's condition.
func (w *world) waitServed(l *jumpstarterv1alpha1.Lease) string {
	w.t.Helper()
	var exporter string
	w.eventually(30*time.Second, "lease "+l.Name+" served", func() string {
		if err := w.c.Get(w.ctx, client.ObjectKeyFromObject(l), l); err != nil {
			return err.Error()
		}
		if c := apimeta.FindStatusCondition(l.Status.Conditions, jumpstarterv1alpha1.LeaseConditionUnsatisfiable); c != nil && c.Status == "True" {
			w.t.Fatalf("lease %s refused: Unsatisfiable %s: %s", l.Name, c.Reason, c.Message)
		}
		if l.Status.ExporterRef == nil {
			return fmt.Sprintf("conditions %v", l.Status.Conditions)
		}
		exporter = l.Status.ExporterRef.Name
		return ""
	})
	return exporter
}

// enabledWatch follows a set's Exporters on a watch and records each moment, after the
// first enabled one appeared, at which none was enabled and not being deleted: a Lease
// created then would have ended Unsatisfiable.
type enabledWatch struct {
	mu    sync.Mutex
	seen  bool
	now   map[types.UID]bool // enabled and not being deleted
	gaps  []string
	stop  func()
	added int
}

func (w *world) watchEnabled(set string) *enabledWatch {
	w.t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		w.t.Fatal(err)
	}
	wi, err := wc.Watch(w.ctx, &jumpstarterv1alpha1.ExporterList{}, client.InNamespace(w.ns), client.MatchingLabels{pool.LabelSet: set})
	if err != nil {
		w.t.Fatal(err)
	}
	ew := &enabledWatch{now: map[types.UID]bool{}}
	done := make(chan struct{})
	ew.stop = func() { wi.Stop(); <-done }
	go func() {
		defer close(done)
		for ev := range wi.ResultChan() {
			e, ok := ev.Object.(*jumpstarterv1alpha1.Exporter)
			if !ok {
				continue
			}
			ew.mu.Lock()
			if ev.Type == watch.Added {
				ew.added++
			}
			if ev.Type != watch.Deleted && e.IsEnabled() && e.DeletionTimestamp == nil {
				ew.now[e.UID] = true
				ew.seen = true
			} else {
				delete(ew.now, e.UID)
			}
			if ew.seen && len(ew.now) == 0 {
				ew.gaps = append(ew.gaps, fmt.Sprintf("%s %s %s", time.Now().Format("15:04:05.000"), ev.Type, e.Name))
			}
			ew.mu.Unlock()
		}
	}()
	w.t.Cleanup(func() { ew.stop() })
	return ew
}

// check stops the watch and fails the test for every moment without an enabled Exporter.
func (ew *enabledWatch) check(t *testing.T) {
	t.Helper()
	ew.stop()
	ew.mu.Lock()
	defer ew.mu.Unlock()
	if !ew.seen {
		t.Errorf("the watch saw no enabled Exporter: it judged nothing")
	}
	for _, g := range ew.gaps {
		t.Errorf("no enabled Exporter matched the set's selector after: %s", g)
	}
}

// A controller that stops between two leases at maxReplicas 1 (a crash, an upgrade, a lost
// lock) leaves a released instance whose exporter exits, and a Lease already waiting on it.
// The next process starts from the cache alone: it renews the instance in place and serves
// the Lease, promptly, without a second Exporter and without a moment with none enabled.
func TestRestartBetweenLeasesAtCeilingOne(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	stop := w.controller(env.Config)
	w.set("one", 0, 1, 1)
	w.waitStatus("one", 30*time.Second, "1 available", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas == 1 })
	enabled := w.watchEnabled("one")
	cw := w.watchCeiling("one", 1)
	for i := range 3 {
		l := w.lease(fmt.Sprintf("before-%d", i), "one")
		w.waitServed(l)
		w.release(l)
		stop() // at once: the exit after the lease and the next Lease happen while none runs
		next := w.lease(fmt.Sprintf("after-%d", i), "one")
		time.Sleep(500 * time.Millisecond)
		stop = w.controller(env.Config)
		start := time.Now()
		w.waitServed(next)
		if took := time.Since(start); took > 15*time.Second {
			t.Errorf("restart %d: the waiting Lease was served %s after the controller started", i, took)
		}
		w.release(next)
	}
	enabled.check(t)
	cw.check(t, 1, 1)
}
