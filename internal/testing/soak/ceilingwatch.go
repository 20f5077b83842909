package soak

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// ceilingJudgeDelay is how long the checker waits before judging an Exporter that took its
// set over maxReplicas: a raised maxReplicas arrives on the set's watch, which may lag the
// Exporters' a little.
const ceilingJudgeDelay = 2 * time.Second

// ceilingWatch counts each set's Exporters from the checker's Exporter watch: one counts from
// the event that makes it the set's (ADDED, or an update that gives it the set's controller
// reference) until the event that ends that (DELETED, or an update that releases it). Every
// Exporter counts, whatever its state: live, retiring, exited, being deleted. The watch
// delivers the changes in etcd's order, so a replacement created while its predecessor still
// exists is seen, however short the overlap: no sampling can miss it.
//
// The invariant (InvWatchedOverCeiling) is that an Exporter joining a set never takes it over
// the highest maxReplicas in effect from Recent before until the judgement. It is never
// excused: no fault makes the reconciler create past the ceiling. A set above a lowered
// ceiling is the timed InvStaysAbove's to judge.
type ceilingWatch struct {
	mu      sync.Mutex
	members map[types.UID]map[types.UID]string // set UID -> Exporter UID -> name
	maxes   map[types.UID][]maxChange          // set UID -> its maxReplicas over time
	pending []ceilingGrowth
}

// ceilingGrowth is an Exporter joining its set beyond the ceiling as the checker knew it.
type ceilingGrowth struct {
	at      time.Time
	set     types.UID
	setName string
	joined  string
	present []string
}

func newCeilingWatch() *ceilingWatch {
	return &ceilingWatch{members: map[types.UID]map[types.UID]string{}, maxes: map[types.UID][]maxChange{}}
}

// watchCeilings registers the ceiling watch's handlers on the checker's informers.
func (c *Checker) watchCeilings(ctx context.Context) error {
	sets, err := c.cache.GetInformer(ctx, &vtv1alpha1.ExporterSet{})
	if err != nil {
		return err
	}
	if _, err := sets.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.cw.setMax,
		UpdateFunc: func(_, n any) { c.cw.setMax(n) },
	}); err != nil {
		return err
	}
	exporters, err := c.cache.GetInformer(ctx, &jumpstarterv1alpha1.Exporter{})
	if err != nil {
		return err
	}
	_, err = exporters.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.cw.exporterEvent,
		UpdateFunc: func(_, n any) { c.cw.exporterEvent(n) },
		DeleteFunc: c.cw.exporterGone,
	})
	return err
}

// setMax records a set's maxReplicas as the set's watch reports it.
func (w *ceilingWatch) setMax(obj any) {
	set, ok := obj.(*vtv1alpha1.ExporterSet)
	if !ok {
		return
	}
	var m int32
	if set.Spec.MaxReplicas != nil {
		m = *set.Spec.MaxReplicas
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	h := w.maxes[set.UID]
	if n := len(h); n == 0 || h[n-1].max != unbounded(m) {
		w.maxes[set.UID] = append(h, maxChange{at: time.Now(), max: unbounded(m)})
	}
}

// exporterEvent counts e in (or out of) the set that controls it now.
func (w *ceilingWatch) exporterEvent(obj any) {
	e, ok := obj.(*jumpstarterv1alpha1.Exporter)
	if !ok {
		return
	}
	now := time.Now()
	setUID, owned := controllerUID(e, "ExporterSet")
	w.mu.Lock()
	defer w.mu.Unlock()
	for uid, m := range w.members {
		if _, in := m[e.UID]; in && (!owned || uid != setUID) {
			delete(m, e.UID) // released from the set (reclaimPolicy Retain)
		}
	}
	if !owned {
		return
	}
	m := w.members[setUID]
	if m == nil {
		m = map[types.UID]string{}
		w.members[setUID] = m
	}
	if _, in := m[e.UID]; in {
		return
	}
	m[e.UID] = e.Name
	if h := w.maxes[setUID]; len(h) > 0 && int64(len(m)) <= h[len(h)-1].max {
		return
	}
	present := make([]string, 0, len(m))
	for _, n := range m {
		present = append(present, n)
	}
	sort.Strings(present)
	w.pending = append(w.pending, ceilingGrowth{at: now, set: setUID, setName: controllerName(e), joined: e.Name, present: present})
}

// exporterGone counts a deleted Exporter out of its set. A tombstone (after a re-list)
// carries the last state the informer had, which names the set.
func (w *ceilingWatch) exporterGone(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	e, ok := obj.(*jumpstarterv1alpha1.Exporter)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, m := range w.members {
		delete(m, e.UID)
	}
}

// judge returns the violations among the growths seen at least ceilingJudgeDelay ago: those
// beyond the highest maxReplicas in effect from o.Recent before the growth until now.
func (w *ceilingWatch) judge(now time.Time, recent time.Duration) []Violation {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []Violation
	rest := w.pending[:0]
	for _, g := range w.pending {
		if now.Sub(g.at) < ceilingJudgeDelay {
			rest = append(rest, g)
			continue
		}
		allowed, known := highestMaxSince(w.maxes[g.set], g.at.Add(-recent))
		if !known || int64(len(g.present)) <= allowed {
			continue // a set never seen has been deleted meanwhile: its Exporters go with it
		}
		out = append(out, Violation{At: g.at, Invariant: InvWatchedOverCeiling, Object: g.setName,
			Detail: fmt.Sprintf("at %s %s joined set %s as its Exporter number %d, over maxReplicas %s (the highest from %s before): %s existed at once (counted from the watch, ADDED until DELETED)",
				g.at.Format("15:04:05.000"), g.joined, g.setName, len(g.present), fmtMax(allowed), recent, strings.Join(g.present, ", "))})
	}
	w.pending = rest
	// Forget what no pending growth can still ask about: the values in effect before the
	// oldest window that remains open.
	for uid, h := range w.maxes {
		cut := now.Add(-recent - ceilingJudgeDelay)
		for len(h) > 1 && h[1].at.Before(cut) {
			h = h[1:]
		}
		w.maxes[uid] = h
	}
	return out
}

// highestMaxSince is the highest maxReplicas in effect at any time from since on: the value
// in effect at since and every later one.
func highestMaxSince(h []maxChange, since time.Time) (highest int64, known bool) {
	for i, c := range h {
		if i+1 < len(h) && !h[i+1].at.After(since) {
			continue // replaced before since
		}
		highest, known = max(highest, c.max), true
	}
	return highest, known
}

// controllerName is the name of e's controlling ExporterSet.
func controllerName(e *jumpstarterv1alpha1.Exporter) string {
	if ref := metav1.GetControllerOf(e); ref != nil {
		return ref.Name
	}
	return ""
}
