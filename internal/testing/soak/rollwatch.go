package soak

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	expool "github.com/exporterset/exporterset/exporterset/pool"
)

// The roll floor invariant's memory. The checker cannot compute a set's spec hash (the
// reconciler derives it from the provisioner's request), so it learns which hashes are
// outdated from the walk: every edit that changes what instances are built from (a
// template revision, class parameters) is recorded with RollStarted, and every hash the
// checker saw on the set's instances before the edit was sent is outdated once the edit
// is accepted. That is sound because the walk's revisions only grow: a spec never returns
// to an earlier hash, so a hash once outdated stays outdated. Hashes made outdated by an
// edit the walk did not record (a class restored with a newer revision) are simply not
// known, and their retirements are not judged.
//
// Availability is remembered per instance (lastAvail), from every Exporter and Pod event
// and every tick, so that a retirement can be judged against what was available a moment
// before: the controller decided on a view slightly older than the one the checker has
// when the annotation arrives.

// rollSkew is how far the roll floor looks back before the controller's pass (the
// retiring annotation's time, to the second) and how long after observing a retirement it
// waits before judging it: the watches of Pods and Exporters lag each other and the
// controller's.
const rollSkew = time.Second

// rollRecord is a roll under way: since the walk's edit, until no instance of an older
// hash is left.
type rollRecord struct {
	start, end time.Time
	via        string
}

// outdatedSince says from when the controller's passes treat a hash as outdated: those that
// began at from, or whose writes come after a status observing generation gen (when > 0).
type outdatedSince struct {
	from time.Time
	gen  int64
}

// observedAt is the first status of a set, by resourceVersion, that observed a generation.
type observedAt struct{ gen, rv int64 }

// specSample is the part of a set's spec the floor depends on, from a moment on, and
// whether a scale-down could retire at once (no cooldown, or the cooldown clock running).
type specSample struct {
	at                       time.Time
	minR, minAvail, maxRepl  int32
	noCooldown, surplusClock bool
}

type rollWatch struct {
	mu         sync.Mutex
	hashSeen   map[string]map[string]time.Time     // set -> spec hash -> first seen on an instance
	outdated   map[string]map[string]outdatedSince // set -> spec hash -> since when outdated
	observed   map[string][]observedAt             // set -> generations its status observed
	rolls      map[string]*rollRecord              // set -> its roll under way
	specs      map[string][]specSample
	lastAvail  map[types.UID]time.Time
	lastLeased map[types.UID]time.Time
	pending    []pendingRetirement

	started, completed, judged int
	// budgetDips counts the roll retirements that left one less available instance than
	// the floor only because the set was at its CapacityBudget's allowed (rollfloor.go).
	budgetDips int
	byVia      map[string]int
	skipped    map[string]int // outdated retirements not judged, by why
}

func newRollWatch() *rollWatch {
	return &rollWatch{
		hashSeen: map[string]map[string]time.Time{}, outdated: map[string]map[string]outdatedSince{}, observed: map[string][]observedAt{},
		rolls: map[string]*rollRecord{}, specs: map[string][]specSample{},
		lastAvail: map[types.UID]time.Time{}, lastLeased: map[types.UID]time.Time{},
		byVia: map[string]int{}, skipped: map[string]int{},
	}
}

// RollStarted records that the walk sent, at start, an edit that changes set's spec hash,
// and that the API server had accepted it by end: every hash seen on the set's instances
// before start is outdated from end on. Retirements are judged from a controller pass that
// began rollSkew after end (the retiring annotation's time), so that the controller's cache
// had the edit, or, for a template edit that gave the set generation gen (0 for none), from
// a retire patch written after a status observing gen: the set's passes run one at a time,
// so the pass that retired saw the edit. It returns the hashes so marked.
func (c *Checker) RollStarted(set, via string, start, end time.Time, gen int64) []string {
	r := c.rw
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.outdated[set]
	if out == nil {
		out = map[string]outdatedSince{}
		r.outdated[set] = out
	}
	var marked []string
	for h, seen := range r.hashSeen[set] {
		if seen.Before(start) {
			if _, ok := out[h]; !ok {
				out[h] = outdatedSince{from: end.Add(rollSkew), gen: gen}
			}
			marked = append(marked, h)
		}
	}
	sort.Strings(marked)
	if prev := r.rolls[set]; prev != nil {
		r.completed++ // superseded: the newer roll carries on
	}
	r.rolls[set] = &rollRecord{start: start, end: end, via: via}
	r.started++
	r.byVia[via]++
	return marked
}

// RollStats returns how many rolls the walk started (in all and by the action that
// started them), how many ended with no outdated instance left (or were superseded), how
// many roll retirements were judged, and the outdated retirements not judged, by why.
func (c *Checker) RollStats() (started int, byVia map[string]int, completed, judged int, skipped map[string]int) {
	r := c.rw
	r.mu.Lock()
	defer r.mu.Unlock()
	byVia, skipped = map[string]int{}, map[string]int{}
	for k, n := range r.byVia {
		byVia[k] = n
	}
	for k, n := range r.skipped {
		skipped[k] = n
	}
	return r.started, byVia, r.completed, r.judged, skipped
}

// watchRolls adds the roll floor's handlers to the checker's informers.
func (c *Checker) watchRolls(ctx context.Context) error {
	handlers := map[client.Object]toolscache.ResourceEventHandlerFuncs{
		&vtv1alpha1.ExporterSet{}: {
			AddFunc:    c.rollSetSeen,
			UpdateFunc: func(_, n any) { c.rollSetSeen(n) },
		},
		&jumpstarterv1alpha1.Exporter{}: {
			AddFunc:    func(obj any) { c.rollExporterSeen(ctx, nil, obj) },
			UpdateFunc: func(o, n any) { c.rollExporterSeen(ctx, o, n) },
		},
		&corev1.Pod{}: {
			AddFunc:    func(obj any) { c.rollPodSeen(ctx, nil, obj) },
			UpdateFunc: func(o, n any) { c.rollPodSeen(ctx, o, n) },
		},
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

// rollSetSeen records the set's floor-related spec, when it changed.
func (c *Checker) rollSetSeen(obj any) {
	set, ok := obj.(*vtv1alpha1.ExporterSet)
	if !ok {
		return
	}
	s := specSample{at: time.Now(), minR: set.Spec.MinReplicas, minAvail: set.Spec.MinAvailableReplicas,
		noCooldown: set.Spec.ScaleDownCooldown == nil || set.Spec.ScaleDownCooldown.Duration <= 0, surplusClock: set.Status.SurplusSince != nil}
	if set.Spec.MaxReplicas != nil {
		s.maxRepl = *set.Spec.MaxReplicas
	}
	r := c.rw
	r.mu.Lock()
	defer r.mu.Unlock()
	obs := r.observed[set.Name]
	if rv, err := strconv.ParseInt(set.ResourceVersion, 10, 64); err == nil && (len(obs) == 0 || set.Status.ObservedGeneration > obs[len(obs)-1].gen) {
		r.observed[set.Name] = append(obs, observedAt{gen: set.Status.ObservedGeneration, rv: rv})
	}
	l := r.specs[set.Name]
	if n := len(l); n > 0 && l[n-1] == (specSample{at: l[n-1].at, minR: s.minR, minAvail: s.minAvail, maxRepl: s.maxRepl, noCooldown: s.noCooldown, surplusClock: s.surplusClock}) {
		return
	}
	r.specs[set.Name] = append(l, s)
}

// sawGeneration reports whether a write of resourceVersion rv came after a status of set
// that observed generation gen. Under r.mu. The API server's resourceVersions are etcd's
// revisions, one counter for every object, so two objects' versions order their writes.
func (r *rollWatch) sawGeneration(set string, gen int64, rv string) bool {
	v, err := strconv.ParseInt(rv, 10, 64)
	if gen <= 0 || err != nil {
		return false
	}
	for _, o := range r.observed[set] {
		if o.gen >= gen {
			return v > o.rv
		}
	}
	return false
}

// specsSince returns the set's specs in effect at some moment from from on: the last one
// before from and every later one. Under r.mu.
func (r *rollWatch) specsSince(set string, from time.Time) []specSample {
	l := r.specs[set]
	i := 0
	for i+1 < len(l) && !l[i+1].at.After(from) {
		i++
	}
	return l[i:]
}

// podsOf lists, from the checker's cache, the Pods an Exporter controls.
func (c *Checker) podsOf(ctx context.Context, uid types.UID) []*corev1.Pod {
	var pods corev1.PodList
	if err := c.cache.List(ctx, &pods, client.InNamespace(c.ns)); err != nil {
		return nil
	}
	return podsByController(pods.Items)[uid]
}

// availableAs is the checker's own reading of an available instance: not deleting nor
// retiring, enabled, unleased, Online and Registered, and no failure on its newest Pod
// (the soak's diagnosis, diagnose.go).
func availableAs(e *jumpstarterv1alpha1.Exporter, pods []*corev1.Pod) bool {
	if _, retiring := e.Annotations[retiringKey]; retiring || e.DeletionTimestamp != nil || !e.IsEnabled() || leaseOf(e) != "" {
		return false
	}
	cs := e.Status.Conditions
	if !apimeta.IsStatusConditionTrue(cs, jumpstarterv1alpha1.ExporterConditionOnline) || !apimeta.IsStatusConditionTrue(cs, jumpstarterv1alpha1.ExporterConditionRegistered) {
		return false
	}
	return instanceProblem(&expool.Instance{Exporter: e, Pods: pods}) == ""
}

// mark notes, under r.mu, that e (with pods) was available or leased at now.
func (r *rollWatch) mark(e *jumpstarterv1alpha1.Exporter, pods []*corev1.Pod, now time.Time) {
	if availableAs(e, pods) {
		r.lastAvail[e.UID] = now
	}
	if leaseOf(e) != "" && e.DeletionTimestamp == nil {
		r.lastLeased[e.UID] = now
	}
}

// rollExporterSeen learns hashes, remembers availability before and after the change, and
// catches the controller's retirements (the retiring annotation appearing).
func (c *Checker) rollExporterSeen(ctx context.Context, oldObj, newObj any) {
	n, ok := newObj.(*jumpstarterv1alpha1.Exporter)
	if !ok || n.Labels[expool.LabelSet] == "" {
		return
	}
	o, _ := oldObj.(*jumpstarterv1alpha1.Exporter)
	now := time.Now()
	pods := c.podsOf(ctx, n.UID)
	set := n.Labels[expool.LabelSet]
	r := c.rw
	r.mu.Lock()
	if h := n.Labels[expool.LabelSpecHash]; h != "" {
		if r.hashSeen[set] == nil {
			r.hashSeen[set] = map[string]time.Time{}
		}
		if _, seen := r.hashSeen[set][h]; !seen {
			r.hashSeen[set][h] = now
		}
	}
	if o != nil {
		r.mark(o, pods, now) // it was so until now
	}
	r.mark(n, pods, now)
	r.mu.Unlock()
	if o == nil {
		return
	}
	_, was := o.Annotations[retiringKey]
	_, is := n.Annotations[retiringKey]
	if !was && is && !n.IsEnabled() {
		c.observeRetirement(ctx, o, n, pods, now)
	}
}

// rollPodSeen remembers the availability of a Pod's Exporter before and after the Pod
// changed.
func (c *Checker) rollPodSeen(ctx context.Context, oldObj, newObj any) {
	p, ok := newObj.(*corev1.Pod)
	if !ok {
		return
	}
	ref := metav1.GetControllerOf(p)
	if ref == nil || ref.Kind != "Exporter" {
		return
	}
	var e jumpstarterv1alpha1.Exporter
	if err := c.cache.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: ref.Name}, &e); err != nil || e.UID != ref.UID {
		return
	}
	pods := c.podsOf(ctx, e.UID)
	now := time.Now()
	r := c.rw
	r.mu.Lock()
	defer r.mu.Unlock()
	if o, ok := oldObj.(*corev1.Pod); ok {
		before := make([]*corev1.Pod, 0, len(pods))
		for _, q := range pods {
			if q.UID == o.UID {
				q = o
			}
			before = append(before, q)
		}
		r.mark(&e, before, now)
	}
	r.mark(&e, pods, now)
}

// tickRolls marks what is available now, judges the retirements due and ends the rolls
// with no outdated instance left.
func (c *Checker) tickRolls(ctx context.Context, now time.Time) error {
	var exporters jumpstarterv1alpha1.ExporterList
	var pods corev1.PodList
	for _, l := range []client.ObjectList{&exporters, &pods} {
		if err := c.cache.List(ctx, l, client.InNamespace(c.ns)); err != nil {
			return err
		}
	}
	byOwner := podsByController(pods.Items)
	r := c.rw
	r.mu.Lock()
	for i := range exporters.Items {
		e := &exporters.Items[i]
		r.mark(e, byOwner[e.UID], now)
	}
	for uid, at := range r.lastAvail {
		if now.Sub(at) > time.Minute {
			delete(r.lastAvail, uid)
		}
	}
	for uid, at := range r.lastLeased {
		if now.Sub(at) > time.Minute {
			delete(r.lastLeased, uid)
		}
	}
	var due, rest []pendingRetirement
	for _, p := range r.pending {
		if now.Sub(p.obs) >= rollSkew {
			due = append(due, p)
		} else {
			rest = append(rest, p)
		}
	}
	r.pending = rest
	var notes []string
	for set, roll := range r.rolls {
		left := 0
		for i := range exporters.Items {
			e := &exporters.Items[i]
			if _, old := r.outdated[set][e.Labels[expool.LabelSpecHash]]; old && e.Labels[expool.LabelSet] == set && e.DeletionTimestamp == nil {
				left++
			}
		}
		if left == 0 && now.After(roll.end) {
			delete(r.rolls, set)
			r.completed++
			notes = append(notes, "roll of set "+set+" ("+roll.via+", started "+roll.start.Format("15:04:05.000")+") done: no instance of an older spec hash left after "+now.Sub(roll.start).Round(time.Millisecond).String())
		}
	}
	r.mu.Unlock()
	sort.Strings(notes)
	for _, n := range notes {
		c.history.Record(KindNote, "checker: %s", n)
	}
	for _, p := range due {
		c.judgeRetirement(p, byOwner[p.uid], now)
	}
	return nil
}

// fmtHashes lists hashes for a history line.
func fmtHashes(h []string) string {
	if len(h) == 0 {
		return "none seen yet"
	}
	return strings.Join(h, ",")
}
