package controllerapp

import (
	"context"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A namespace being deleted takes its locks' Leases with it, and then refuses to create them
// again, to this process and to every other alike. A renewal that fails for that reason is not
// a lost lock: nobody can hold it, so stopping the process (the rule for a lost lock) would
// only stall every other namespace's pools for a restart and their locks' expiry, and leave
// the terminating namespace's finalizers (external targets) without anyone to clean them up.

// namespaceFate is what a dry-run create of a lock's Lease says of its namespace.
type namespaceFate int

const (
	namespaceLive        namespaceFate = iota // the Lease could be created: a lock really lost
	namespaceTerminating                      // refused with NamespaceTerminating
	namespaceGone                             // the namespace does not exist
	namespaceUnknown                          // the API server did not say
)

// fateOf asks the API server, with a server-side dry-run create of k's Lease (the lock's own
// verb, so no permission on Namespaces is needed), what became of k's namespace.
func (l *provisionerLocks) fateOf(ctx context.Context, k lockKey) namespaceFate {
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: k.namespace, Name: k.lease}}
	_, err := l.client.Leases(k.namespace).Create(ctx, lease, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	switch {
	case err == nil || apierrors.IsAlreadyExists(err):
		return namespaceLive
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return namespaceTerminating
	case apierrors.IsNotFound(err):
		return namespaceGone
	}
	return namespaceUnknown
}

// outlive is called when the held lock k could not be renewed. It reports false when the lock
// was really lost (the namespace lives, or the API server did not answer). Otherwise k's
// namespace is ending: k stays held while it terminates (no one else can take it) and is
// forgotten once the namespace is gone or was made anew, so that a namespace of the same name
// campaigns afresh. It returns true then, once that is done or ctx ends.
func (l *provisionerLocks) outlive(ctx context.Context, k lockKey) bool {
	switch l.fateOf(ctx, k) {
	case namespaceLive, namespaceUnknown:
		return false
	case namespaceTerminating:
		l.log.Info("the lock's namespace is being deleted and took its Lease with it; nobody can take the lock, so this process keeps acting there until it is gone", "lease", k.namespace+"/"+k.lease)
		t := time.NewTicker(l.retry)
		defer t.Stop()
		for l.fateOf(ctx, k) == namespaceTerminating {
			select {
			case <-ctx.Done():
				return true
			case <-t.C:
			}
		}
	}
	if ctx.Err() != nil {
		return true // the process stops: the lock goes with it
	}
	l.forget(k)
	l.log.Info("the lock's namespace is gone; its lock is forgotten", "lease", k.namespace+"/"+k.lease)
	return true
}

// forget drops k: the next set seen in its namespace starts a new campaign.
func (l *provisionerLocks) forget(k lockKey) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.held, k)
}
