package jumpsim

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/internal/exportercfg"
	"github.com/exporterset/exporterset/internal/testing/leasehook"
)

// The scheduler's writes: a lease assigned, ended or released, and the Exporter's leaseRef
// and owner reference that follow, in the order the real controller makes them.

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
	var hooks *exportercfg.Hooks
	var pod types.UID
	var report *leasehook.Report
	if ex.Status.LeaseRef == nil {
		// A process with hooks reports its beforeLease hook in the same write.
		hooks, pod, report = sc.s.leaseStarting(ctx, ex, lease)
	}
	wrote, err := sc.s.writeStatus(ctx, ex, func() bool {
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
	switch {
	case report == nil:
	case wrote && err == nil:
		sc.s.recordReport(client.ObjectKeyFromObject(ex), *report)
		if hooks != nil {
			sc.s.runHook(ctx, ex, pod, lease, leasehook.Before, hooks, false)
		}
	default:
		sc.s.hooks.drop(ex.UID, pod, lease) // not written: the next try starts again
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
// Invalid) True, and ended. Pending is left as it was (True with its last reason, if the
// lease waited), as upstream leaves it: status.ended is what says the lease is over.
func (sc *scheduler) endUnassigned(ctx context.Context, l *jsv1.Lease, typ, reason, message string) error {
	now := metav1.Now()
	wrote, err := sc.s.writeStatus(ctx, l, func() bool {
		if l.Status.Ended || l.Status.ExporterRef != nil {
			return false
		}
		l.Status.Ended = true
		l.Status.EndTime = &now
		setCond(&l.Status.Conditions, typ, true, l.Generation, reason, message)
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
		sc.s.record("scheduler", action, "Lease", l.Namespace, l.Name, "%s: %s", reason, message)
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
	// The Exporter's update may have been handled while the reservation still held it: look
	// at the waiting leases again now that it is free.
	sc.pokeWaiting(ctx, l.Namespace)
	return nil
}

// pokeWaiting enqueues the waiting leases of namespace (without blocking: a full queue of
// pokes already brings them round).
func (sc *scheduler) pokeWaiting(ctx context.Context, namespace string) {
	for _, req := range sc.waitingLeases(ctx, namespace) {
		ev := event.GenericEvent{Object: &jsv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name}}}
		select {
		case sc.s.leasePokes <- ev:
		default:
		}
	}
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
	// A process with hooks runs its afterLease hook first, reporting it in the same write.
	after, hooked := sc.s.leaseEnding(ctx, ex, lease, exiting)
	if !exiting && ended && sc.s.opts.afterLeaseDelay > 0 {
		sc.s.presence.setAfterLease(ex.UID, time.Now().Add(sc.s.opts.afterLeaseDelay))
	}
	wrote, err := sc.s.writeStatus(ctx, ex, func() bool {
		if ex.Status.LeaseRef == nil || ex.Status.LeaseRef.Name != lease {
			return false
		}
		ex.Status.LeaseRef = nil
		switch {
		case exiting && !hooked:
			markExited(ex)
		case meta.IsStatusConditionTrue(ex.Status.Conditions, jsv1.ExporterConditionOnline):
			v, msg, _ := sc.s.onlineStatusValue(ex)
			setStatusValue(ex, v, msg)
		}
		return true
	})
	if wrote && err == nil && hooked {
		if after.report != nil {
			sc.s.recordReport(client.ObjectKeyFromObject(ex), *after.report)
		}
		switch {
		case after.hooks != nil:
			sc.s.runHook(ctx, ex, after.pod, lease, leasehook.After, after.hooks, exiting)
		case after.pod != "":
			sc.s.pokePod(ctx, ex.Namespace, after.pod) // exiting after a failed beforeLease hook
		}
	}
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
