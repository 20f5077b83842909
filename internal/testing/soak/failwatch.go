package soak

import (
	"context"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	expool "github.com/exporterset/exporterset/exporterset/pool"
)

// failureWatch is the checker's memory for the failure invariants (the Available rule and
// bounded churn) and its count of the failures the controller reported. It has its own
// lock: its handlers run on the informers' goroutines beside the checker's.
type failureWatch struct {
	mu       sync.Mutex
	failing  map[string]map[string]time.Time // set -> fault key -> since (the walk's record)
	churn    map[string]*churnTracker
	avail    map[string]*availableTracker
	degraded map[string]string // set -> its last Degraded=True reason
	reasons  map[string]int    // Degraded reasons newly reported, by reason
	wffc     int               // statuses wffcLeasedCounted flagged
	judged   int               // statuses judged Available=True
	// worstCreated/worstBound is the churn window closest to its bound, for the summary.
	worstCreated, worstBound int64
}

func newFailureWatch() *failureWatch {
	return &failureWatch{
		failing: map[string]map[string]time.Time{}, churn: map[string]*churnTracker{},
		avail: map[string]*availableTracker{}, degraded: map[string]string{}, reasons: map[string]int{},
	}
}

func (f *failureWatch) tracker(set string) *churnTracker {
	t := f.churn[set]
	if t == nil {
		t = &churnTracker{}
		f.churn[set] = t
	}
	return t
}

// SetFailing records, from the walk, that set fails because of the fault key (on) or no
// longer does (off). A set fails while it has at least one such fault.
func (c *Checker) SetFailing(set, key string, on bool) {
	f := c.fw
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	keys := f.failing[set]
	if on {
		if keys == nil {
			keys = map[string]time.Time{}
			f.failing[set] = keys
		}
		keys[key] = now
	} else {
		delete(keys, key)
	}
	t := f.tracker(set)
	switch {
	case len(keys) > 0 && t.failingSince.IsZero():
		t.failingSince, t.reported = now, false
	case len(keys) == 0:
		t.failingSince = time.Time{}
	}
}

// NoteDisruption records that the walk takes a Pod from set ("" for every set): its
// replacement may be created between two backoff attempts.
func (c *Checker) NoteDisruption(set string) {
	c.fw.note(set, func(t *churnTracker, now time.Time) { t.disruptions = append(t.disruptions, now) })
}

// NoteReset records something that resets the reconciler's failure count for set ("" for
// every set): a controller restart or a node fault.
func (c *Checker) NoteReset(set string) {
	c.fw.note(set, func(t *churnTracker, now time.Time) { t.resets = append(t.resets, now) })
}

func (f *failureWatch) note(set string, do func(*churnTracker, time.Time)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	if set != "" {
		do(f.tracker(set), now)
		return
	}
	for _, t := range f.churn {
		do(t, now)
	}
}

// FailureStats returns the Degraded reasons the controller newly reported, by reason, how
// many statuses said Available=True, how many of those the documented WaitForFirstConsumer
// rule would have refused (see judgeAvailableStatus), and the churn window that came
// closest to its bound (instances created, bound).
func (c *Checker) FailureStats() (reasons map[string]int, judged, wffcLeased int, worstCreated, worstBound int64) {
	f := c.fw
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int{}
	for r, n := range f.reasons {
		out[r] = n
	}
	return out, f.judged, f.wffc, f.worstCreated, f.worstBound
}

// watchFailures adds the failure invariants' handlers to the checker's informers.
func (c *Checker) watchFailures(ctx context.Context) error {
	handlers := map[client.Object]toolscache.ResourceEventHandlerFuncs{
		&vtv1alpha1.ExporterSet{}: {
			AddFunc:    func(obj any) { c.setSeen(nil, obj) },
			UpdateFunc: func(o, n any) { c.setSeen(o, n) },
		},
		&vtv1alpha1.VirtualTargetClass{}: {
			AddFunc:    func(obj any) { c.classChanged(ctx, obj) },
			UpdateFunc: func(_, n any) { c.classChanged(ctx, n) },
			DeleteFunc: func(obj any) { c.classChanged(ctx, obj) },
		},
		&jumpstarterv1alpha1.Exporter{}: {
			AddFunc:    c.exporterCreated,
			UpdateFunc: c.exporterReadied,
		},
		&jumpstarterv1alpha1.Lease{}: {UpdateFunc: c.leaseEnded},
	}
	for obj, h := range handlers {
		inf, err := c.cache.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(h); err != nil {
			return err
		}
	}
	return nil
}

// setSeen judges every status the controller writes (Available against its own counters),
// counts new Degraded reasons, and notes generation changes (they reset the backoff).
func (c *Checker) setSeen(oldObj, newObj any) {
	set, ok := newObj.(*vtv1alpha1.ExporterSet)
	if !ok {
		return
	}
	old, _ := oldObj.(*vtv1alpha1.ExporterSet)
	if detail := judgeAvailableStatus(set); detail != "" {
		c.Report(InvAvailableStatus, set.Name, "set %s (resourceVersion %s): %s", set.Name, set.ResourceVersion, detail)
	}
	f := c.fw
	f.mu.Lock()
	defer f.mu.Unlock()
	if availableTrue(set) != nil {
		f.judged++
	}
	if wffcLeasedCounted(set) {
		f.wffc++
	}
	if d := apimeta.FindStatusCondition(set.Status.Conditions, vtv1alpha1.ConditionDegraded); d != nil && d.Status == metav1.ConditionTrue {
		if f.degraded[set.Name] != d.Reason {
			f.reasons[d.Reason]++
		}
		f.degraded[set.Name] = d.Reason
	} else {
		delete(f.degraded, set.Name)
	}
	t := f.tracker(set.Name)
	if old == nil || old.Generation != set.Generation {
		t.resets = append(t.resets, time.Now())
	}
	var maxR int32
	if set.Spec.MaxReplicas != nil {
		maxR = *set.Spec.MaxReplicas
	}
	t.noteBatch(time.Now(), batchOf(set.Spec.MinReplicas, maxR, set.Spec.MinAvailableReplicas))
}

// classChanged resets the backoff of the sets of a class: the reconciler's failure count is
// keyed by the class's resourceVersion.
func (c *Checker) classChanged(ctx context.Context, obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	class, ok := obj.(*vtv1alpha1.VirtualTargetClass)
	if !ok {
		return
	}
	var sets vtv1alpha1.ExporterSetList
	if err := c.cache.List(ctx, &sets, client.InNamespace(c.ns)); err != nil {
		return
	}
	for i := range sets.Items {
		if sets.Items[i].Spec.VirtualTargetClassName == class.Name {
			c.NoteReset(sets.Items[i].Name)
		}
	}
}

// exporterCreated counts an instance created for a set.
func (c *Checker) exporterCreated(obj any) {
	e, ok := obj.(*jumpstarterv1alpha1.Exporter)
	if !ok {
		return
	}
	if set := e.Labels[expool.LabelSet]; set != "" {
		c.fw.note(set, func(t *churnTracker, now time.Time) { t.creations = append(t.creations, now) })
	}
}

// exporterReadied notes an instance becoming ready (Online and Registered): the reconciler
// resets the set's failure count when it sees one that is not failing.
func (c *Checker) exporterReadied(oldObj, newObj any) {
	o, ok1 := oldObj.(*jumpstarterv1alpha1.Exporter)
	n, ok2 := newObj.(*jumpstarterv1alpha1.Exporter)
	if !ok1 || !ok2 || n.Labels[expool.LabelSet] == "" {
		return
	}
	ready := func(e *jumpstarterv1alpha1.Exporter) bool {
		return (&expool.Instance{Exporter: e}).Ready()
	}
	if !ready(o) && ready(n) {
		c.NoteReset(n.Labels[expool.LabelSet])
	}
}

// leaseEnded notes a lease ending on a set's exporter: under ExitAndReplace its instance is
// replaced.
func (c *Checker) leaseEnded(oldObj, newObj any) {
	o, ok1 := oldObj.(*jumpstarterv1alpha1.Lease)
	n, ok2 := newObj.(*jumpstarterv1alpha1.Lease)
	if !ok1 || !ok2 || o.Status.Ended || !n.Status.Ended {
		return
	}
	if set := n.Spec.Selector.MatchLabels["board"]; set != "" {
		c.NoteDisruption(set)
	}
}

// checkFailures evaluates the churn invariant and the live Available cross-check of every
// set from the checker's cache.
func (c *Checker) checkFailures(ctx context.Context, now time.Time) error {
	var sets vtv1alpha1.ExporterSetList
	var exporters jumpstarterv1alpha1.ExporterList
	var pods corev1.PodList
	for _, l := range []client.ObjectList{&sets, &exporters, &pods} {
		if err := c.cache.List(ctx, l, client.InNamespace(c.ns)); err != nil {
			return err
		}
	}
	sort.Slice(sets.Items, func(i, j int) bool { return sets.Items[i].Name < sets.Items[j].Name })
	type found struct{ inv, object, detail string }
	var broken []found
	for i := range sets.Items {
		set := &sets.Items[i]
		shortfall := ""
		if cond := availableTrue(set); cond != nil {
			shortfall = liveShortfall(set, cond, instancesOf(set, exporters.Items, pods.Items), freeBoardsOf(set, exporters.Items))
		}
		excused := c.excusedNow(set.Name, now)
		f := c.fw
		f.mu.Lock()
		at := f.avail[set.Name]
		if at == nil {
			at = &availableTracker{}
			f.avail[set.Name] = at
		}
		if d := at.check(now, set.Name, shortfall, excused, c.opts.AvailableGrace); d != "" {
			broken = append(broken, found{InvAvailableLive, set.Name, d})
		}
		d, created, bound := f.tracker(set.Name).check(now, set.Name, c.opts)
		if d != "" {
			broken = append(broken, found{InvChurn, set.Name, d})
		}
		if bound > 0 && (f.worstBound == 0 || created*f.worstBound > f.worstCreated*bound) {
			f.worstCreated, f.worstBound = created, bound
		}
		f.mu.Unlock()
	}
	for _, b := range broken {
		c.Report(b.inv, b.object, "%s", b.detail)
	}
	return nil
}

// excusedNow is isExcused under the checker's lock.
func (c *Checker) excusedNow(set string, now time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.isExcused(set, now)
}
