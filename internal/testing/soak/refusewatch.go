package soak

import (
	"context"
	"sync"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/jumpsim"
)

// The refusal invariant (InvLeaseRefused, issue 38). Upstream's Jumpstarter core ends a Lease
// Unsatisfiable at once, from its informer cache, when no enabled Exporter matches the
// Lease's selector (NoAccess) or every match is disabled (AllDisabled); the Lease never
// waits, so the set never sees it as demand. jumpsim does the same. A set that could serve
// a user must therefore hold an enabled Exporter whenever one may come, between leases and
// between an instance and its replacement included: a Lease for the set's instances (its
// selector matches the set's template labels) refused with either reason is a violation
// unless, at that moment,
//   - the set is being deleted;
//   - its class does not exist or its provisioner is not served;
//   - a CapacityBudget governing it has a limit of 0 instances, or is full while its status
//     allows the set none: the budget gives it no room;
//   - the Exporters a person disabled (not retiring, not quarantined: the set must leave
//     them alone) hold all of its maxReplicas: the ceiling leaves it no room;
//
// or the soak itself changed the set within RefuseGrace before (the controller needs a pass
// to create an instance, the Jumpstarter core a moment to see it):
//   - the set was created (it has had no chance to make its first instance);
//   - its class name, selector or template labels changed (its instances are other ones);
//   - its class was deleted or created again (it could create nothing meanwhile);
//   - a budget governing it had a limit of 0, or allowed it none while full (the same);
//   - a person (the walk) disabled one of its Exporters (its replacement is not made yet).
//
// Nothing else excuses it, not even the controller being down or a roll: an instance kept
// as it is (its Pod replaced, its Exporter left enabled) keeps its users Pending instead of
// refused. Leases whose selector matches no set's template labels are no pool's users and
// are only counted; pinned leases (spec.exporterRef) and the other reasons are not judged.

// refuseJudgeDelay is how long a refusal waits for its judgement: the sets', classes',
// budgets' and Exporters' watches may lag the Lease's.
const refuseJudgeDelay = 2 * time.Second

// refuseRecent bounds how old a refusal first seen on an ADDED event (a re-list) may be to be
// judged: an old one was judged (or missed) before.
const refuseRecent = 10 * time.Second

// refuseWatch remembers, from the checker's watches, what the refusal invariant needs.
type refuseWatch struct {
	mu      sync.Mutex
	sets    map[string]*refuseSet   // set name
	classes map[string]*refuseClass // class name
	// handDisabled is when an Exporter of the set was last seen disabled by a person;
	// handEnabled when each Exporter disabled by a person was enabled again (set, then name):
	// a refusal is judged after it happened, when the Exporter that filled the ceiling then
	// may be enabled again.
	handDisabled map[string]time.Time
	handEnabled  map[string]map[string]time.Time
	pending      []refusal
	// served says whether a provisioner is served; nil serves every provisioner.
	served func(string) bool

	judged, noPool, excused int
}

// refuseSet is a set as its watch showed it last.
type refuseSet struct {
	uid      types.UID
	created  time.Time // first seen
	changed  time.Time // its class name, selector or template labels last changed; zero if never
	deleting time.Time // first seen being deleted or gone; zero while not
	class    string
	selector string
	labels   labels.Set // its template labels: its instances'
	max      int32
}

// refuseClass is a class as its watch showed it last.
type refuseClass struct {
	present     bool
	sinceAbsent time.Time // when it was last created (seen ADDED) or deleted
	provisioner string
}

// refusal is a Lease seen ending Unsatisfiable with NoAccess or AllDisabled.
type refusal struct {
	at       time.Time
	lease    string
	selector labels.Selector
	reason   string
	message  string
}

func newRefuseWatch() *refuseWatch {
	return &refuseWatch{sets: map[string]*refuseSet{}, classes: map[string]*refuseClass{}, handDisabled: map[string]time.Time{}, handEnabled: map[string]map[string]time.Time{}}
}

// ServeProvisioners tells the checker which provisioners the controller serves (a set whose
// class names another cannot make instances). Without it every provisioner counts as served.
func (c *Checker) ServeProvisioners(served func(name string) bool) {
	c.rf.mu.Lock()
	defer c.rf.mu.Unlock()
	c.rf.served = served
}

// watchRefusals registers the refusal invariant's handlers on the checker's informers.
func (c *Checker) watchRefusals(ctx context.Context) error {
	w := c.rf
	for _, h := range []struct {
		obj client.Object
		fn  toolscache.ResourceEventHandlerFuncs
	}{
		{&jumpstarterv1alpha1.Lease{}, toolscache.ResourceEventHandlerFuncs{AddFunc: func(n any) { w.leaseEvent(nil, n) }, UpdateFunc: w.leaseEvent}},
		{&vtv1alpha1.ExporterSet{}, toolscache.ResourceEventHandlerFuncs{AddFunc: w.setEvent, UpdateFunc: func(_, n any) { w.setEvent(n) }, DeleteFunc: w.setGone}},
		{&vtv1alpha1.VirtualTargetClass{}, toolscache.ResourceEventHandlerFuncs{AddFunc: w.classEvent, UpdateFunc: func(_, n any) { w.classEvent(n) }, DeleteFunc: w.classGone}},
		{&jumpstarterv1alpha1.Exporter{}, toolscache.ResourceEventHandlerFuncs{UpdateFunc: w.exporterEvent}},
	} {
		inf, err := c.cache.GetInformer(ctx, h.obj)
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(h.fn); err != nil {
			return err
		}
	}
	return nil
}

// refusedBy returns the Unsatisfiable condition of l when it refuses the lease for want of
// an enabled Exporter (NoAccess or AllDisabled), nil otherwise.
func refusedBy(l *jumpstarterv1alpha1.Lease) *metav1.Condition {
	c := apimeta.FindStatusCondition(l.Status.Conditions, jumpstarterv1alpha1.LeaseConditionUnsatisfiable)
	if c == nil || c.Status != metav1.ConditionTrue || (c.Reason != jumpsim.ReasonNoAccess && c.Reason != jumpsim.ReasonAllDisabled) {
		return nil
	}
	return c
}

// leaseEvent notes a Lease the moment it is seen refused.
func (w *refuseWatch) leaseEvent(oldObj, obj any) {
	l, ok := obj.(*jumpstarterv1alpha1.Lease)
	if !ok || (l.Spec.ExporterRef != nil && l.Spec.ExporterRef.Name != "") {
		return
	}
	c := refusedBy(l)
	if c == nil {
		return
	}
	if o, ok := oldObj.(*jumpstarterv1alpha1.Lease); ok && refusedBy(o) != nil {
		return // seen before
	}
	now := time.Now()
	if oldObj == nil && (l.Status.EndTime == nil || now.Sub(l.Status.EndTime.Time) > refuseRecent) {
		return // an old refusal, seen again after a re-list
	}
	sel, err := metav1.LabelSelectorAsSelector(&l.Spec.Selector)
	if err != nil || sel.Empty() {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending = append(w.pending, refusal{at: now, lease: l.Name, selector: sel, reason: c.Reason, message: c.Message})
}

func (w *refuseWatch) setEvent(obj any) {
	s, ok := obj.(*vtv1alpha1.ExporterSet)
	if !ok {
		return
	}
	now := time.Now()
	selector := metav1.FormatLabelSelector(&s.Spec.Selector)
	tmpl := labels.Set(s.Spec.Template.Metadata.Labels)
	w.mu.Lock()
	defer w.mu.Unlock()
	rs := w.sets[s.Name]
	if rs == nil || rs.uid != s.UID {
		// Created when first seen: creationTimestamp has whole seconds, and a set seen late
		// (the checker's start) was made no later than that.
		rs = &refuseSet{uid: s.UID, created: now}
		w.sets[s.Name] = rs
	} else if rs.class != s.Spec.VirtualTargetClassName || rs.selector != selector || !labels.Equals(rs.labels, tmpl) {
		rs.changed = now
	}
	rs.class, rs.selector, rs.labels = s.Spec.VirtualTargetClassName, selector, labels.Merge(nil, tmpl)
	rs.max = 0
	if s.Spec.MaxReplicas != nil {
		rs.max = *s.Spec.MaxReplicas
	}
	if s.DeletionTimestamp != nil && rs.deleting.IsZero() {
		rs.deleting = now
	}
}

func (w *refuseWatch) setGone(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	s, ok := obj.(*vtv1alpha1.ExporterSet)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if rs := w.sets[s.Name]; rs != nil && rs.uid == s.UID && rs.deleting.IsZero() {
		rs.deleting = time.Now() // kept: a set of that name made later is another
	}
}

func (w *refuseWatch) classEvent(obj any) {
	cl, ok := obj.(*vtv1alpha1.VirtualTargetClass)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	rc := w.classes[cl.Name]
	if rc == nil {
		rc = &refuseClass{}
		w.classes[cl.Name] = rc
	}
	if !rc.present {
		rc.present, rc.sinceAbsent = true, time.Now()
	}
	rc.provisioner = cl.Spec.Provisioner
}

func (w *refuseWatch) classGone(obj any) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	if cl, ok := obj.(*vtv1alpha1.VirtualTargetClass); ok {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.classes[cl.Name] = &refuseClass{sinceAbsent: time.Now()}
	}
}

// exporterEvent notes a person disabling an Exporter: spec.enabled turned false without the
// controller's retiring annotation or quarantine mark.
func (w *refuseWatch) exporterEvent(oldObj, obj any) {
	o, ok1 := oldObj.(*jumpstarterv1alpha1.Exporter)
	n, ok2 := obj.(*jumpstarterv1alpha1.Exporter)
	if !ok1 || !ok2 {
		return
	}
	if !o.IsEnabled() && n.IsEnabled() {
		if v := viewOf(o, nil); v.handDisabled() && !v.quarantined {
			if set := budgetSetOf(n); set != "" {
				w.mu.Lock()
				if w.handEnabled[set] == nil {
					w.handEnabled[set] = map[string]time.Time{}
				}
				w.handEnabled[set][n.Name] = time.Now()
				w.mu.Unlock()
			}
		}
		return
	}
	if !o.IsEnabled() || n.IsEnabled() {
		return
	}
	if v := viewOf(n, nil); v.retiring || v.quarantined {
		return
	}
	if set := budgetSetOf(n); set != "" {
		w.mu.Lock()
		w.handDisabled[set] = time.Now()
		w.mu.Unlock()
	}
}
