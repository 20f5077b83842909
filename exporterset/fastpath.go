package exporterset

import (
	"context"
	"hash/fnv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// The fast path starts a fresh instance the moment its credential appears, without waiting
// for a pass of its set. A set's passes run one at a time, and a pass that creates a batch
// of Exporters (or writes status, or lists a large pool) held every instance whose
// credential arrived meanwhile: with 50 instances the first one waited over a second for
// its config Secret and Pod. The fast path is keyed by Exporter, so each instance moves on
// its own; it does only what the set's last pass would have done for it, and leaves
// anything else (rolls, failures, backoff, WaitForFirstConsumer, scale-down) to the passes.

// fastEntry is what the last unblocked pass of a set decided that a fresh instance needs:
// the provisioner request of that version of the set and class.
type fastEntry struct {
	setUID       types.UID
	generation   int64
	classVersion string
	class        *vtv1alpha1.VirtualTargetClass
	prov         provisioner.Provisioner
	req          *provisioner.Request
	hash         string
	selector     labels.Selector
	backoffUntil time.Time
}

// rememberFast records p's decisions for the fast path, or forgets them when the set is
// blocked or starts Pods only on demand.
func (r *Reconciler) rememberFast(p *pass, res passResult) {
	key := keyOf(p.set)
	// An external instance's Pod waits for its target (the set's pass creates and observes it).
	if res.blocked != nil || p.req == nil || p.class == nil || p.binding() == vtv1alpha1.BindingWaitForFirstConsumer || externalOf(p.prov) != nil {
		r.memory.fast.dropSet(key)
		return
	}
	e := fastEntry{
		setUID: p.set.UID, generation: p.set.Generation, classVersion: p.class.ResourceVersion,
		class: p.class, prov: p.prov, req: p.req, hash: p.hash, selector: p.selector,
	}
	if res.health.backoff.Failures > 0 {
		e.backoffUntil = res.health.backoff.Until
	}
	r.memory.fast.putSet(key, e)
}

// instanceLocks serialize the configuring of one instance between the fast path and the
// set's pass, so they do not both label its credential and create its Secret and Pod.
// Striped by UID: instances come and go, and a lock per instance would have to be swept.
type instanceLocks [256]sync.Mutex

func (l *instanceLocks) lock(uid types.UID) func() {
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	m := &l[h.Sum32()%uint32(len(l))]
	m.Lock()
	return m.Unlock
}

// fastStart is the fast path's Reconcile, keyed by Exporter.
type fastStart struct{ r *Reconciler }

// Reconcile configures and starts one fresh, credentialed instance when the set's last
// pass would have: the instance is current, not retiring, has neither config Secret nor
// Pod, and the set, class and backoff are as that pass saw them. Otherwise it does nothing:
// the set's own pass, which the same event also triggers, takes care of it.
func (f fastStart) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r := f.r
	var e jumpstarterv1alpha1.Exporter
	if err := r.client.Get(ctx, req.NamespacedName, &e); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	in := &Instance{Exporter: &e}
	if in.Credentialed() {
		defer r.finishFirst.finished(req.String()) // done with it here: a new one may begin
	}
	owner := metav1.GetControllerOf(&e)
	setName := e.Labels[LabelSet]
	if owner == nil || owner.Kind != "ExporterSet" || setName == "" || in.Deleting() || in.Retiring() || !in.Credentialed() || !in.Enabled() {
		return reconcile.Result{}, nil
	}
	fe, ok := r.memory.fast.forSet(e.Namespace + "/" + setName)
	if !ok {
		return reconcile.Result{}, nil
	}
	now := r.clock.Now()
	if fe.setUID != owner.UID || fe.hash != in.SpecHash() || !fe.selector.Matches(labels.Set(e.Labels)) || now.Before(fe.backoffUntil) {
		return reconcile.Result{}, nil
	}
	var set vtv1alpha1.ExporterSet
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: e.Namespace, Name: setName}, &set); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	var class vtv1alpha1.VirtualTargetClass
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: e.Namespace, Name: set.Spec.VirtualTargetClassName}, &class); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if set.UID != fe.setUID || set.Generation != fe.generation || set.DeletionTimestamp != nil || class.ResourceVersion != fe.classVersion {
		return reconcile.Result{}, nil // changed since the last pass: the next pass decides
	}

	unlock := r.instanceLocks.lock(e.UID)
	defer unlock()
	if r.memory.podPending(keyOf(&set), e.UID, now) {
		return reconcile.Result{}, nil
	}
	fresh, err := r.freshInstance(ctx, in)
	if err != nil || !fresh {
		return reconcile.Result{}, err
	}
	defer r.finishFirst.finish()() // new Exporter creates make way for this instance's writes
	p := &pass{
		set: &set, now: now, class: fe.class, prov: fe.prov, req: fe.req, hash: fe.hash,
		selector: fe.selector, events: r.fastEvents(keyOf(&set)), requeue: &soonest{},
	}
	ca, caProblem, err := r.caBundle(ctx, p)
	if err != nil || caProblem != "" {
		return reconcile.Result{}, nil // the set's pass reports it
	}
	if _, err := r.configure(ctx, p, ca, in, true); err != nil {
		// Not retried here: the set's pass retries, and reports it in its conditions.
		logf.FromContext(ctx).V(1).Info("fast start failed; the set's pass takes over", "exporter", e.Name, "error", err.Error())
	}
	return reconcile.Result{}, nil
}

// freshInstance fills in's credential Secret (when labelled already) and reports whether
// the instance is fresh: neither its config Secret nor a Pod exists.
func (r *Reconciler) freshInstance(ctx context.Context, in *Instance) (bool, error) {
	e := in.Exporter
	var s corev1.Secret
	err := r.client.Get(ctx, types.NamespacedName{Namespace: e.Namespace, Name: ConfigSecretName(e.Name)}, &s)
	if err == nil || !apierrors.IsNotFound(err) {
		return false, client.IgnoreNotFound(err)
	}
	var pod corev1.Pod
	err = r.client.Get(ctx, types.NamespacedName{Namespace: e.Namespace, Name: e.Name}, &pod)
	if err == nil || !apierrors.IsNotFound(err) {
		return false, client.IgnoreNotFound(err)
	}
	var cred corev1.Secret
	err = r.client.Get(ctx, types.NamespacedName{Namespace: e.Namespace, Name: e.Status.Credential.Name}, &cred)
	switch {
	case err == nil:
		in.Credential = &cred
	case !apierrors.IsNotFound(err):
		return false, err
	}
	return true, nil
}

// fastEvents returns the events the fast path collected for a set; its next pass records
// them with its own, so a scale-up still makes one event per pass and reason.
func (r *Reconciler) fastEvents(key string) *passEvents {
	m := r.memory.fastEv
	m.mu.Lock() // get or put, atomically
	defer m.mu.Unlock()
	s := m.setOf(key, true)
	if s.own == nil {
		s.own = &memoEntry[*passEvents]{v: &passEvents{}, write: m.clock.Add(1)}
	}
	return s.own.v
}

// takeFastEvents moves the fast path's events of a set into a pass's.
func (r *Reconciler) takeFastEvents(key string, into *passEvents) {
	from, ok := r.memory.fastEv.forSet(key)
	if !ok {
		return
	}
	from.mu.Lock()
	items := from.items
	from.items = nil
	from.mu.Unlock()
	for reason, list := range items {
		for _, it := range list {
			into.add(reason, it.text, it.related)
		}
	}
}
