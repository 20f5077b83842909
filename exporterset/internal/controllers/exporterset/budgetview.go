package exporterset

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/budget"
	"github.com/exporterset/exporterset/exporterset/internal/ledger"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// AnnotationRequests is written on each Exporter a budgeted set creates: its instance's Pod
// requests as the provisioner rendered them (JSON, e.g. {"cpu":"2","memory":"4Gi"}), so that
// every controller counts a budget's resources from the Exporters alone.
const AnnotationRequests = ledger.AnnotationRequests

// reserve takes places in the set's budgets for the Exporters named, in order, and returns
// how many of them (a prefix) it got (internal/ledger).
func (r *Reconciler) reserve(ctx context.Context, p *pass, names []string, per corev1.ResourceList) (int, error) {
	l := ledger.Ledger{Cache: r.client, Live: r.apiReader, Writer: r.client, Now: r.Clock.Now}
	got, retry, err := l.Reserve(ctx, p.set, p.gov.names(), names, per)
	if retry {
		p.requeueIn(conflictRetry)
	}
	return got, err
}

// BudgetSet is a governed set as the allocation sees it (the CapacityBudget controller's
// SetView), from the cache (Instances and Used
// are the ledger's count).
func (r *Reconciler) BudgetSet(ctx context.Context, set *vtv1alpha1.ExporterSet, now time.Time) (budget.Set, error) {
	sel, err := metav1.LabelSelectorAsSelector(&set.Spec.Selector)
	if err != nil {
		sel = labels.Everything() // the set is blocked; its Exporters still count
	}
	obs, err := r.observe(ctx, set, sel, nil)
	if err != nil {
		return budget.Set{}, err
	}
	return budgetSetOf(set, obs, r.leadTimeOf(set), now), nil
}

// budgetSetOf is a set as the allocation sees it (pure).
func budgetSetOf(set *vtv1alpha1.ExporterSet, obs *observation, lead time.Duration, now time.Time) budget.Set {
	s := budget.Set{Name: set.Name, Min: set.Spec.MinReplicas, Waiting: int32(len(obs.WaitingLeases))}
	if set.Spec.MaxReplicas != nil {
		s.Max = *set.Spec.MaxReplicas
	}
	var newest time.Time
	for _, in := range obs.Instances {
		switch {
		case in.Deleting() || in.Retiring(),
			in.Terminal() && !in.Leased() && set.Spec.RecycleStrategy != vtv1alpha1.RecycleInPlaceReuse: // exited: removed next
			s.Leaving++
			continue
		case in.Leased():
			s.Leased++
		case in.Enabled() && !in.Quarantined() && !in.Terminal() && !in.Failed():
			s.Idle++
		}
		if t := in.Exporter.CreationTimestamp.Time; s.PerInstance == nil || !t.Before(newest) {
			if rl := ledger.RequestsOf(in.Exporter); rl != nil {
				s.PerInstance, newest = rl, t // the newest instance renders as a new one would
			}
		}
	}
	s.Leaving += int32(len(obs.Strays)) // no longer selected: retired once unleased
	for _, l := range obs.WaitingLeases {
		if t := l.CreationTimestamp.Time; s.OldestWaiting.IsZero() || t.Before(s.OldestWaiting) {
			s.OldestWaiting = t
		}
	}
	for _, bk := range obs.Bookings {
		if bk.Begin.Sub(now) <= lead {
			s.BookedDue++
		}
	}
	s.Wanted = budget.WantedOf(s.Min, s.Max, pool.Buffer(set.Spec.MinAvailableReplicas, set.Status.HardwareAvailableReplicas), s.Leased, s.Waiting, s.BookedDue)
	return s
}

// leadTimeOf is a set's lead time for bookings as its own passes last learned it, read
// without recording anything (bookingLead is the set pass's).
func (r *Reconciler) leadTimeOf(set *vtv1alpha1.ExporterSet) time.Duration {
	if v, ok := set.Annotations[AnnotationBookingLeadTime]; ok {
		if d, err := time.ParseDuration(v); err == nil && d >= 0 {
			return d
		}
	}
	if log, ok := r.memory.startup.ForSet(keyOf(set)); ok {
		if lead, ok := log.LeadTime(); ok {
			return lead
		}
	}
	return DefaultBookingLeadTime
}

// ServesSet reports whether this process acts on set: it serves the set's provisioner and
// holds the gate's lock for it.
func (r *Reconciler) ServesSet(ctx context.Context, set *vtv1alpha1.ExporterSet) bool {
	var class vtv1alpha1.VirtualTargetClass
	if err := r.client.Get(ctx, client.ObjectKey{Namespace: set.Namespace, Name: set.Spec.VirtualTargetClassName}, &class); err != nil {
		return false
	}
	_, ok := r.registry.Get(class.Spec.Provisioner)
	return ok && r.Gate(set.Namespace, class.Spec.Provisioner)
}

// setsOfBudget maps a budget to the sets it selects now or allocated for before (a set
// whose label was removed must hear that it is no longer governed).
func (r *Reconciler) setsOfBudget(ctx context.Context, o client.Object) []reconcile.Request {
	cb, ok := o.(*vtv1alpha1.CapacityBudget)
	if !ok {
		return nil
	}
	var sets vtv1alpha1.ExporterSetList
	if err := r.client.List(ctx, &sets, client.InNamespace(cb.Namespace)); err != nil {
		return nil
	}
	listed := map[string]bool{}
	for _, s := range cb.Status.Sets {
		listed[s.Name] = true
	}
	return requestsFor(sets.Items, func(s *vtv1alpha1.ExporterSet) bool { return listed[s.Name] || ledger.Selects(cb, s) })
}
