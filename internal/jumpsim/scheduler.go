package jumpsim

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// Lease condition reasons.
const (
	ReasonOffline      = "Offline"      // Pending: exporters match, none Registered and Online
	ReasonNotAvailable = "NotAvailable" // Pending: every online match is leased
	ReasonNotReady     = "NotReady"     // Pending: free online matches are busy (exporterStatus)
	ReasonWaiting      = "Waiting"      // Pending: the requested begin time is in the future
	ReasonNoExporter   = "NoExporter"   // Unsatisfiable: no enabled exporter matches
	ReasonInvalid      = "InvalidSelector"
	ReasonReady        = "Ready"
	ReasonReleased     = "Released"
	ReasonExpired      = "Expired"
)

// pendingSafetyRequeue re-examines waiting leases even without events. Events (Exporter and
// Lease changes) drive scheduling; this only bounds the damage of a missed one.
const pendingSafetyRequeue = 5 * time.Second

// scheduler assigns Leases to Exporters. Reconciles run concurrently, and the cache lags
// behind the scheduler's own writes, so assignments are reserved in memory first: an
// Exporter counts as leased if reserved here, or if the cache shows it leased (which also
// covers assignments by an earlier Simulator). Both can only over-report, never miss, a lease.
type scheduler struct {
	s  *Simulator
	mu sync.Mutex
	// byExporter maps an Exporter to the lease reserved for it.
	byExporter map[types.NamespacedName]reservation
	// byLease maps a lease back to its Exporter.
	byLease map[types.NamespacedName]types.NamespacedName
}

type reservation struct {
	lease string
	uid   types.UID // of the Exporter, so a re-created namesake is not considered leased
}

func newScheduler(s *Simulator) *scheduler {
	return &scheduler{
		s:          s,
		byExporter: map[types.NamespacedName]reservation{},
		byLease:    map[types.NamespacedName]types.NamespacedName{},
	}
}

func (s *Simulator) setupScheduler() error {
	sc := s.sched
	err := builder.ControllerManagedBy(s.mgr).
		Named("jumpsim-lease").
		For(&jsv1.Lease{}).
		// Exporters coming online, freed, disabled or relabelled change what waiting leases
		// can get; an Exporter's leaseRef names a lease to check.
		Watches(&jsv1.Exporter{}, handler.EnqueueRequestsFromMapFunc(sc.exporterToLeases)).
		// A lease ending or going away frees its Exporter for the waiting ones.
		Watches(&jsv1.Lease{}, handler.EnqueueRequestsFromMapFunc(sc.endedLeaseToWaiting)).
		WatchesRawSource(source.Channel(s.leasePokes, &handler.EnqueueRequestForObject{})).
		Complete(reconcile.Func(sc.reconcile))
	if err != nil {
		return fmt.Errorf("jumpsim: setting up lease scheduler: %w", err)
	}
	return nil
}

func (sc *scheduler) waitingLeases(ctx context.Context, namespace string) []reconcile.Request {
	var list jsv1.LeaseList
	if err := sc.s.client.List(ctx, &list, client.InNamespace(namespace), client.MatchingFields{indexLeaseWaiting: "true"}, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(list.Items))
	for _, l := range list.Items {
		out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&l)})
	}
	return out
}

func (sc *scheduler) exporterToLeases(ctx context.Context, obj client.Object) []reconcile.Request {
	ex := obj.(*jsv1.Exporter)
	reqs := sc.waitingLeases(ctx, ex.Namespace)
	if ex.Status.LeaseRef != nil {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ex.Namespace, Name: ex.Status.LeaseRef.Name}})
	}
	return reqs
}

func (sc *scheduler) endedLeaseToWaiting(ctx context.Context, obj client.Object) []reconcile.Request {
	l := obj.(*jsv1.Lease)
	if !l.Status.Ended && l.DeletionTimestamp == nil {
		return nil
	}
	return sc.waitingLeases(ctx, l.Namespace)
}

func (sc *scheduler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var l jsv1.Lease
	err := sc.s.client.Get(ctx, req.NamespacedName, &l)
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, sc.forgetLease(ctx, req.NamespacedName)
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	var res reconcile.Result
	now := time.Now()
	switch {
	case l.DeletionTimestamp != nil:
		err = sc.releaseExporter(ctx, &l, false)
	case l.Status.Ended:
		err = sc.finishEnded(ctx, &l)
	case l.Status.ExporterRef != nil:
		res, err = sc.reconcileAssigned(ctx, &l, now)
	default:
		res, err = sc.reconcileWaiting(ctx, &l, now)
	}
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		return reconcile.Result{}, sc.s.reconcileError("scheduler", "Lease", req.NamespacedName, err)
	}
	return res, nil
}

// reconcileAssigned keeps an assigned lease's ownership and Exporter leaseRef in place and
// ends it on release or expiry.
func (sc *scheduler) reconcileAssigned(ctx context.Context, l *jsv1.Lease, now time.Time) (reconcile.Result, error) {
	exKey := types.NamespacedName{Namespace: l.Namespace, Name: l.Status.ExporterRef.Name}
	var ex jsv1.Exporter
	exErr := sc.s.client.Get(ctx, exKey, &ex)
	if uid, _, owned := controllerUID(l, "Exporter"); exErr == nil && owned && uid != ex.UID {
		// The Exporter that held the lease was replaced by a namesake, which must not
		// inherit the lease (with the garbage collector on, the lease goes with its owner).
		exErr = apierrors.NewNotFound(jsv1.GroupVersion.WithResource("exporters").GroupResource(), exKey.Name)
	}
	if exErr == nil {
		sc.adopt(exKey, l.Name, ex.UID)
	}
	if l.Spec.Release {
		return reconcile.Result{}, sc.end(ctx, l, ReasonReleased, "The lease was marked for release")
	}
	var res reconcile.Result
	if at, ok := expiry(l); ok {
		if !now.Before(at) {
			return reconcile.Result{}, sc.end(ctx, l, ReasonExpired, "The lease has expired")
		}
		res.RequeueAfter = requeueAt(at, now)
	}
	if exErr != nil {
		// A vanished Exporter: its Lease is garbage collected with it (it is the owner).
		return res, client.IgnoreNotFound(exErr)
	}
	if err := sc.ensureOwner(ctx, l, &ex); err != nil {
		return res, err
	}
	return res, sc.ensureLeaseRef(ctx, &ex, l.Name)
}

// reconcileWaiting decides for a lease that is neither ended nor assigned, in the contract's
// order: invalid, released, expired, not yet begun, unsatisfiable, offline, not available,
// not ready, assigned.
func (sc *scheduler) reconcileWaiting(ctx context.Context, l *jsv1.Lease, now time.Time) (reconcile.Result, error) {
	sel, err := metav1.LabelSelectorAsSelector(&l.Spec.Selector)
	if err != nil {
		return reconcile.Result{}, sc.endUnassigned(ctx, l, jsv1.LeaseConditionInvalid, ReasonInvalid, fmt.Sprintf("Invalid selector: %v", err))
	}
	if l.Spec.Release {
		return reconcile.Result{}, sc.end(ctx, l, ReasonReleased, "The lease was marked for release")
	}
	if l.Spec.EndTime != nil && !now.Before(l.Spec.EndTime.Time) {
		return reconcile.Result{}, sc.end(ctx, l, ReasonExpired, "The lease has expired")
	}
	if begin, ok := requestedBegin(l); ok && now.Before(begin) {
		err := sc.setPending(ctx, l, ReasonWaiting, fmt.Sprintf("The lease begins at %s", begin.UTC().Format(time.RFC3339)))
		return reconcile.Result{RequeueAfter: requeueAt(begin, now)}, err
	}

	candidates, err := sc.candidates(ctx, sc.s.client, l, sel)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(candidates) == 0 {
		// Ending is final: confirm with the apiserver that the cache is not just behind a
		// freshly created Exporter.
		live, err := sc.candidates(ctx, sc.s.reader, l, sel)
		if err != nil {
			return reconcile.Result{}, err
		}
		if len(live) > 0 {
			return reconcile.Result{RequeueAfter: 50 * time.Millisecond}, nil
		}
		msg := "No enabled exporter matches the selector"
		if l.Spec.ExporterRef != nil && l.Spec.ExporterRef.Name != "" {
			msg = fmt.Sprintf("Exporter %s does not exist, is disabled or does not match the selector", l.Spec.ExporterRef.Name)
		}
		return reconcile.Result{}, sc.endUnassigned(ctx, l, jsv1.LeaseConditionUnsatisfiable, ReasonNoExporter, msg)
	}

	leasedInCache, err := sc.leasedInCache(ctx, l)
	if err != nil {
		return reconcile.Result{}, err
	}
	chosen, reason, msg := sc.pick(l, candidates, leasedInCache)
	if chosen == nil {
		return reconcile.Result{RequeueAfter: pendingSafetyRequeue}, sc.setPending(ctx, l, reason, msg)
	}
	return sc.assign(ctx, l, chosen, now)
}

// candidates lists the Exporters a lease may get: matching the selector (and the pinned
// name), enabled unless the lease allows disabled ones. From the cache they are shallow
// copies sharing maps and slices with it (every waiting lease looks at every Exporter on every
// change, so deep copies would dominate at scale): read them, never modify them.
func (sc *scheduler) candidates(ctx context.Context, r client.Reader, l *jsv1.Lease, sel labels.Selector) ([]jsv1.Exporter, error) {
	var list jsv1.ExporterList
	if err := r.List(ctx, &list, client.InNamespace(l.Namespace), client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := list.Items[:0]
	for _, ex := range list.Items {
		if l.Spec.ExporterRef != nil && l.Spec.ExporterRef.Name != "" && ex.Name != l.Spec.ExporterRef.Name {
			continue
		}
		if !ex.IsEnabled() && !l.Spec.AllowDisabled {
			continue
		}
		out = append(out, ex)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// leasedInCache returns the Exporters (name -> UID, empty when unknown) that the cache shows
// held by another lease that has not ended.
func (sc *scheduler) leasedInCache(ctx context.Context, l *jsv1.Lease) (map[string][]types.UID, error) {
	var list jsv1.LeaseList
	if err := sc.s.client.List(ctx, &list, client.InNamespace(l.Namespace), client.MatchingFields{indexLeaseActive: "true"}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := map[string][]types.UID{}
	for i := range list.Items {
		o := &list.Items[i]
		if o.Name == l.Name || o.Status.Ended || o.Status.ExporterRef == nil {
			continue
		}
		uid, _, _ := controllerUID(o, "Exporter")
		out[o.Status.ExporterRef.Name] = append(out[o.Status.ExporterRef.Name], uid)
	}
	return out, nil
}

// pick chooses the first free, online and ready candidate by name and reserves it for l, or
// says why the lease has to wait.
func (sc *scheduler) pick(l *jsv1.Lease, candidates []jsv1.Exporter, leasedInCache map[string][]types.UID) (*jsv1.Exporter, string, string) {
	var online []*jsv1.Exporter
	for i := range candidates {
		ex := &candidates[i]
		if ex.DeletionTimestamp == nil &&
			meta.IsStatusConditionTrue(ex.Status.Conditions, jsv1.ExporterConditionRegistered) &&
			meta.IsStatusConditionTrue(ex.Status.Conditions, jsv1.ExporterConditionOnline) {
			online = append(online, ex)
		}
	}
	if len(online) == 0 {
		return nil, ReasonOffline, fmt.Sprintf("There are %d matching exporters, but none is registered and online", len(candidates))
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	free, ready := 0, 0
	var chosen *jsv1.Exporter
	for _, ex := range online {
		if sc.leasedLocked(l, ex, leasedInCache) {
			continue
		}
		free++
		switch ex.Status.ExporterStatusValue {
		case "", jsv1.ExporterStatusUnspecified, jsv1.ExporterStatusAvailable:
		default:
			continue // still busy, e.g. cleaning up after its previous lease
		}
		ready++
		if chosen == nil {
			chosen = ex
		}
	}
	switch {
	case free == 0:
		return nil, ReasonNotAvailable, fmt.Sprintf("There are %d online matching exporters, but all of them are already leased", len(online))
	case ready == 0:
		return nil, ReasonNotReady, fmt.Sprintf("There are %d free online matching exporters, but none is ready for a lease", free)
	}
	key := client.ObjectKeyFromObject(chosen)
	sc.byExporter[key] = reservation{lease: l.Name, uid: chosen.UID}
	sc.byLease[client.ObjectKeyFromObject(l)] = key
	return chosen.DeepCopy(), "", "" // it will be written to
}

func (sc *scheduler) leasedLocked(l *jsv1.Lease, ex *jsv1.Exporter, leasedInCache map[string][]types.UID) bool {
	if r, ok := sc.byExporter[client.ObjectKeyFromObject(ex)]; ok && r.uid == ex.UID && r.lease != l.Name {
		return true
	}
	if ex.Status.LeaseRef != nil && ex.Status.LeaseRef.Name != l.Name {
		return true
	}
	for _, uid := range leasedInCache[ex.Name] {
		if uid == "" || uid == ex.UID {
			return true
		}
	}
	return false
}

// adopt records an assignment found in the apiserver (made before a restart, or by a pass
// whose reservation was dropped).
func (sc *scheduler) adopt(exKey types.NamespacedName, lease string, uid types.UID) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if r, ok := sc.byExporter[exKey]; ok && r.lease != lease && r.uid == uid {
		sc.s.record("scheduler", ActionAnomaly, "Exporter", exKey.Namespace, exKey.Name, "assigned to lease %s while reserved for lease %s", lease, r.lease)
	}
	sc.byExporter[exKey] = reservation{lease: lease, uid: uid}
	sc.byLease[types.NamespacedName{Namespace: exKey.Namespace, Name: lease}] = exKey
}

// unreserve drops the reservation of lease, if it still holds one.
func (sc *scheduler) unreserve(leaseKey types.NamespacedName) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	exKey, ok := sc.byLease[leaseKey]
	if !ok {
		return
	}
	delete(sc.byLease, leaseKey)
	if r, ok := sc.byExporter[exKey]; ok && r.lease == leaseKey.Name {
		delete(sc.byExporter, exKey)
	}
}

// assign gives l to ex: lease status first (the fact clients wait for), then the owner
// reference and the Exporter's leaseRef; later passes repair the latter two if a write fails.
func (sc *scheduler) assign(ctx context.Context, l *jsv1.Lease, ex *jsv1.Exporter, now time.Time) (reconcile.Result, error) {
	leaseKey := client.ObjectKeyFromObject(l)
	begin := metav1.NewTime(now)
	wrote, err := sc.s.writeStatus(ctx, l, func() bool {
		if l.Status.Ended || l.Status.ExporterRef != nil {
			return false
		}
		l.Status.ExporterRef = ptr.To(exRef(ex.Name))
		l.Status.BeginTime = &begin
		// Pending is left as it was: upstream never flips it back after assignment.
		setCond(&l.Status.Conditions, jsv1.LeaseConditionReady, true, l.Generation, ReasonReady, "An exporter has been acquired for the client")
		return true
	})
	if err != nil || !wrote {
		// Not written: keep the reservation only if the lease is in fact assigned to ex (a
		// stale cache made this pass repeat an assignment already done).
		if err != nil || l.Status.ExporterRef == nil || l.Status.ExporterRef.Name != ex.Name {
			sc.unreserve(leaseKey)
		}
		return reconcile.Result{RequeueAfter: 10 * time.Millisecond}, err
	}
	sc.s.record("scheduler", ActionLeaseAssigned, "Lease", l.Namespace, l.Name, "assigned exporter %s", ex.Name)
	if err := sc.ensureOwner(ctx, l, ex); err != nil {
		return reconcile.Result{}, err
	}
	if err := sc.ensureLeaseRef(ctx, ex, l.Name); err != nil {
		return reconcile.Result{}, err
	}
	var res reconcile.Result
	if at, ok := expiry(l); ok {
		res.RequeueAfter = requeueAt(at, time.Now())
	}
	return res, nil
}

// ensureOwner makes ex the controller owner of l, demoting any other controller reference
// (a lease has exactly one controller: its Exporter).
func (sc *scheduler) ensureOwner(ctx context.Context, l *jsv1.Lease, ex *jsv1.Exporter) error {
	var demoted []string
	_, err := sc.s.writeObject(ctx, l, func() bool {
		demoted = demoted[:0]
		changed, found := false, false
		refs := l.GetOwnerReferences()
		for i := range refs {
			r := &refs[i]
			if r.UID == ex.UID {
				found = true
				if r.Controller == nil || !*r.Controller || r.BlockOwnerDeletion == nil || !*r.BlockOwnerDeletion {
					r.Controller, r.BlockOwnerDeletion = ptr.To(true), ptr.To(true)
					changed = true
				}
				continue
			}
			if r.Controller != nil && *r.Controller {
				r.Controller = ptr.To(false)
				demoted = append(demoted, r.Kind+"/"+r.Name)
				changed = true
			}
		}
		if !found {
			refs = append(refs, *metav1.NewControllerRef(ex, jsv1.GroupVersion.WithKind("Exporter")))
			changed = true
		}
		l.SetOwnerReferences(refs)
		return changed
	})
	if len(demoted) > 0 && err == nil {
		sc.s.record("scheduler", ActionAnomaly, "Lease", l.Namespace, l.Name, "lease had another controller %v; the Exporter %s took over", demoted, ex.Name)
	}
	return err
}

// ensureLeaseRef points ex's status.leaseRef at lease and reports LeaseReady.
func (sc *scheduler) ensureLeaseRef(ctx context.Context, ex *jsv1.Exporter, lease string) error {
	var other string
	_, err := sc.s.writeStatus(ctx, ex, func() bool {
		other = ""
		if ex.Status.LeaseRef != nil {
			if ex.Status.LeaseRef.Name != lease {
				other = ex.Status.LeaseRef.Name
			}
			return false
		}
		ex.Status.LeaseRef = ptr.To(exRef(lease))
		if meta.IsStatusConditionTrue(ex.Status.Conditions, jsv1.ExporterConditionOnline) {
			v, msg, _ := sc.s.onlineStatusValue(ex)
			setStatusValue(ex, v, msg)
		}
		return true
	})
	if other != "" {
		sc.s.record("scheduler", ActionAnomaly, "Exporter", ex.Namespace, ex.Name, "leaseRef names lease %s, not %s", other, lease)
	}
	return err
}

// end ends a lease (assigned or not) with Ready=False and the given reason.
func (sc *scheduler) end(ctx context.Context, l *jsv1.Lease, reason, message string) error {
	now := metav1.Now()
	wrote, err := sc.s.writeStatus(ctx, l, func() bool {
		if l.Status.Ended {
			return false
		}
		l.Status.Ended = true
		l.Status.EndTime = &now
		setCond(&l.Status.Conditions, jsv1.LeaseConditionReady, false, l.Generation, reason, message)
		return true
	})
	if err != nil {
		return err
	}
	if wrote {
		exporter := "none"
		if l.Status.ExporterRef != nil {
			exporter = l.Status.ExporterRef.Name
		}
		sc.s.record("scheduler", ActionLeaseEnded, "Lease", l.Namespace, l.Name, "%s (exporter %s)", reason, exporter)
	}
	return sc.finishEnded(ctx, l)
}

// endUnassigned ends a lease that can never be assigned: condition typ (Unsatisfiable or
// Invalid) True and Pending False.
func (sc *scheduler) endUnassigned(ctx context.Context, l *jsv1.Lease, typ, reason, message string) error {
	now := metav1.Now()
	wrote, err := sc.s.writeStatus(ctx, l, func() bool {
		if l.Status.Ended || l.Status.ExporterRef != nil {
			return false
		}
		l.Status.Ended = true
		l.Status.EndTime = &now
		setCond(&l.Status.Conditions, typ, true, l.Generation, reason, message)
		setCond(&l.Status.Conditions, jsv1.LeaseConditionPending, false, l.Generation, typ, message)
		return true
	})
	if err != nil {
		return err
	}
	if wrote {
		action := ActionLeaseUnsatisfiable
		if typ == jsv1.LeaseConditionInvalid {
			action = ActionLeaseInvalid
		}
		sc.s.record("scheduler", action, "Lease", l.Namespace, l.Name, "%s", message)
	}
	if !l.Status.Ended {
		return nil // assigned meanwhile; the next pass handles it
	}
	return sc.finishEnded(ctx, l)
}

// setPending records why a lease waits.
func (sc *scheduler) setPending(ctx context.Context, l *jsv1.Lease, reason, message string) error {
	old := meta.FindStatusCondition(l.Status.Conditions, jsv1.LeaseConditionPending)
	wrote, err := sc.s.writeStatus(ctx, l, func() bool {
		if l.Status.Ended || l.Status.ExporterRef != nil {
			return false
		}
		return setCond(&l.Status.Conditions, jsv1.LeaseConditionPending, true, l.Generation, reason, message)
	})
	if err == nil && wrote && (old == nil || old.Reason != reason || old.Status != metav1.ConditionTrue) {
		sc.s.record("scheduler", ActionLeasePending, "Lease", l.Namespace, l.Name, "%s: %s", reason, message)
	}
	return err
}

// finishEnded completes an ended lease: the ended label, the Exporter freed.
func (sc *scheduler) finishEnded(ctx context.Context, l *jsv1.Lease) error {
	if _, err := sc.s.writeObject(ctx, l, func() bool {
		if l.Labels[jsv1.LeaseEndedLabel] == "true" {
			return false
		}
		if l.Labels == nil {
			l.Labels = map[string]string{}
		}
		l.Labels[jsv1.LeaseEndedLabel] = "true"
		return true
	}); err != nil {
		return err
	}
	return sc.releaseExporter(ctx, l, true)
}

// releaseExporter clears the leaseRef of the Exporter holding l and drops the reservation.
// An Exporter whose process exits after a lease goes offline in the same write, so it is
// never seen free and online on its way out.
func (sc *scheduler) releaseExporter(ctx context.Context, l *jsv1.Lease, ended bool) error {
	leaseKey := client.ObjectKeyFromObject(l)
	if l.Status.ExporterRef == nil {
		sc.unreserve(leaseKey)
		return nil
	}
	var ex jsv1.Exporter
	err := sc.s.client.Get(ctx, types.NamespacedName{Namespace: l.Namespace, Name: l.Status.ExporterRef.Name}, &ex)
	if apierrors.IsNotFound(err) {
		sc.unreserve(leaseKey)
		return nil
	}
	if err != nil {
		return err
	}
	if err := sc.clearLeaseRef(ctx, &ex, l.Name, ended); err != nil {
		return err
	}
	sc.unreserve(leaseKey)
	return nil
}

// clearLeaseRef frees ex from lease. ended says the lease ended (rather than vanished), which
// is what makes an exitOnLeaseEnd exporter exit.
func (sc *scheduler) clearLeaseRef(ctx context.Context, ex *jsv1.Exporter, lease string, ended bool) error {
	if ex.Status.LeaseRef == nil || ex.Status.LeaseRef.Name != lease {
		// Nothing to free, or the cache has not seen the leaseRef yet: its arrival enqueues
		// this lease again (exporterToLeases).
		return nil
	}
	exiting := ended && sc.s.exitsOnLeaseEnd(ctx, ex)
	if !exiting && ended && sc.s.opts.afterLeaseDelay > 0 {
		sc.s.presence.setAfterLease(ex.UID, time.Now().Add(sc.s.opts.afterLeaseDelay))
	}
	_, err := sc.s.writeStatus(ctx, ex, func() bool {
		if ex.Status.LeaseRef == nil || ex.Status.LeaseRef.Name != lease {
			return false
		}
		ex.Status.LeaseRef = nil
		switch {
		case exiting:
			markExited(ex)
		case meta.IsStatusConditionTrue(ex.Status.Conditions, jsv1.ExporterConditionOnline):
			v, msg, _ := sc.s.onlineStatusValue(ex)
			setStatusValue(ex, v, msg)
		}
		return true
	})
	return client.IgnoreNotFound(err)
}

// forgetLease handles a lease that is gone: its reservation is dropped and an Exporter still
// naming it in leaseRef is freed.
func (sc *scheduler) forgetLease(ctx context.Context, key types.NamespacedName) error {
	// Confirm: the cache may not have the lease yet.
	var live jsv1.Lease
	if err := sc.s.reader.Get(ctx, key, &live); err == nil {
		return nil
	} else if !apierrors.IsNotFound(err) {
		return err
	}
	sc.unreserve(key)
	var list jsv1.ExporterList
	if err := sc.s.client.List(ctx, &list, client.InNamespace(key.Namespace)); err != nil {
		return err
	}
	for i := range list.Items {
		ex := &list.Items[i]
		if ex.Status.LeaseRef != nil && ex.Status.LeaseRef.Name == key.Name {
			if err := sc.clearLeaseRef(ctx, ex, key.Name, false); err != nil {
				return err
			}
		}
	}
	return nil
}

func exRef(name string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: name} }
