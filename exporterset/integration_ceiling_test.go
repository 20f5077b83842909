package exporterset_test

import (
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// ceilingWatch counts a set's Exporters from a watch of the API server: each one from its
// ADDED event until its DELETED event (deleted, or released from the set: it no longer
// carries the set's label). Exporters being deleted, retiring or exited count: they still
// exist. The watch sees every change in etcd's order, so no excess can fall between two
// polls.
type ceilingWatch struct {
	mu      sync.Mutex
	now     map[types.UID]string
	highest int
	added   int
	excess  []string // the Exporters present each time the count went over the ceiling
	ended   bool     // the watch closed before stop
	stop    func()
	done    chan struct{}
}

func (w *world) watchCeiling(set string, ceiling int) *ceilingWatch {
	w.t.Helper()
	return w.watchExporters(labels.SelectorFromSet(labels.Set{pool.LabelSet: set}), ceiling)
}

// watchExporters counts the Exporters sel selects, as watchCeiling does for one set.
func (w *world) watchExporters(sel labels.Selector, ceiling int) *ceilingWatch {
	w.t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		w.t.Fatal(err)
	}
	wi, err := wc.Watch(w.ctx, &jumpstarterv1alpha1.ExporterList{}, client.InNamespace(w.ns), client.MatchingLabelsSelector{Selector: sel})
	if err != nil {
		w.t.Fatal(err)
	}
	c := &ceilingWatch{now: map[types.UID]string{}, done: make(chan struct{})}
	stopped := make(chan struct{})
	var once sync.Once
	c.stop = func() { once.Do(func() { close(stopped); wi.Stop() }); <-c.done }
	go func() {
		defer close(c.done)
		for ev := range wi.ResultChan() {
			e, ok := ev.Object.(*jumpstarterv1alpha1.Exporter)
			if !ok {
				continue // a watch error: the channel closes next
			}
			c.mu.Lock()
			switch ev.Type {
			case watch.Added:
				c.now[e.UID] = e.Name
				c.added++
				if len(c.now) > ceiling {
					var names []string
					for _, n := range c.now {
						names = append(names, n)
					}
					c.excess = append(c.excess, time.Now().Format("15:04:05.000")+" "+joinNames(names))
				}
				c.highest = max(c.highest, len(c.now))
			case watch.Deleted:
				delete(c.now, e.UID)
			}
			c.mu.Unlock()
		}
		select {
		case <-stopped:
		default:
			c.mu.Lock()
			c.ended = true
			c.mu.Unlock()
		}
	}()
	w.t.Cleanup(c.stop)
	return c
}

func joinNames(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// check stops the watch and fails the test if the count ever went over the ceiling, or if
// the watch saw fewer than minAdded Exporters (then it watched nothing worth judging).
func (c *ceilingWatch) check(t *testing.T, ceiling, minAdded int) {
	t.Helper()
	c.stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ended {
		t.Errorf("the Exporter watch ended early: an excess after it would go unseen")
	}
	if c.added < minAdded {
		t.Errorf("the watch saw %d Exporters added, want at least %d", c.added, minAdded)
	}
	for _, x := range c.excess {
		t.Errorf("over maxReplicas %d: %s", ceiling, x)
	}
	t.Logf("%d Exporters added, at most %d at once (maxReplicas %d)", c.added, c.highest, ceiling)
}

// At maxReplicas 1 with a warm buffer of 1 and ExitAndReplace, every released lease recycles
// the only instance in place (pool/leasewait.go): the Exporter stays, so that the next Lease
// waits for it, and a fresh Pod replaces the one whose exporter exited; there are never two
// Exporters of the set at once.
func TestCeilingHoldsThroughLeaseCycles(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	watch := w.watchCeiling("pool", 1)
	w.set("pool", 0, 1, 1, func(s *vtv1alpha1.ExporterSet) { s.Spec.RecycleStrategy = vtv1alpha1.RecycleExitAndReplace })
	w.waitHealthy("pool", 1, 30*time.Second)
	const cycles = 4
	var waits []time.Duration
	for i := range cycles {
		l := w.lease("cycle-"+string(rune('a'+i)), "pool")
		used := w.waitAssigned(l)
		pod := w.podUID(used)
		released := time.Now()
		w.release(l)
		w.waitFreshPod(used, pod)
		waits = append(waits, time.Since(released))
		w.waitHealthy("pool", 1, 30*time.Second)
	}
	watch.check(t, 1, 1)
	t.Logf("release -> fresh Pod created (seen by polling): %v", waits)
}

// A roll at a full ceiling goes by retiring an outdated instance first and creating its
// replacement once it is gone: the surge never takes the set over maxReplicas.
func TestCeilingHoldsThroughRoll(t *testing.T) {
	w := newWorld(t, jumpsim500msStart()...)
	w.class("fake")
	w.controller(env.Config)
	watch := w.watchCeiling("pool", 2)
	set := w.set("pool", 0, 2, 2)
	w.waitHealthy("pool", 2, 30*time.Second)
	before := w.specHash("pool")
	w.edit(set, func() { set.Spec.Template.Metadata.Annotations = map[string]string{"rev": "2"} })
	w.eventually(60*time.Second, "the roll to finish", func() string {
		st := w.getSet("pool").Status
		if w.rolled("pool", before) && st.AvailableReplicas >= 2 && len(w.exporters("pool")) == 2 {
			return ""
		}
		return summary(st)
	})
	watch.check(t, 2, 4)
}
