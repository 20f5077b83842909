package exporterset

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// instanceReconciler builds one instance, keyed by its Exporter: it labels the instance's
// credential Secret, writes (and keeps in sync) its config Secret, and starts and restarts
// its Pods, as its set's last pass decided (intents.go). It is the only writer of those
// objects. Its workqueue serialises the reconciles of one Exporter, and takes instances up
// in the order their events arrive, so the first instance created is the first finished
// without any gate between creating and finishing.
type instanceReconciler struct{ r *Reconciler }

// Reconcile brings one instance along: nothing until its credential is issued and its
// set's intents are published; then its config Secret, its Pod restarts and its Pod.
func (ir instanceReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	r := ir.r
	var e jumpstarterv1alpha1.Exporter
	if err := r.client.Get(ctx, req.NamespacedName, &e); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	in := &pool.Instance{Exporter: &e}
	setName := objects.SetOwnerOf(&e)
	if setName == "" || in.Foreign() || outOfPool(in) || !in.Credentialed() {
		return reconcile.Result{}, nil // a retiring or quarantined instance keeps what it has until removed
	}
	var set vtv1alpha1.ExporterSet
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: e.Namespace, Name: setName}, &set); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	key := keyOf(&set)
	d, ok := r.memory.intents.forSet(key)
	if !ok || set.DeletionTimestamp != nil || d.setUID != set.UID || d.generation != set.Generation || !objects.IsControlledBy(&e, set.UID) {
		return reconcile.Result{}, nil // the set's next pass decides, and pokes its instances
	}
	if r.gate != nil && !r.gate(set.Namespace, d.class.Spec.Provisioner) {
		return reconcile.Result{}, nil // another process serves this provisioner now
	}
	var class vtv1alpha1.VirtualTargetClass
	if err := r.client.Get(ctx, types.NamespacedName{Namespace: e.Namespace, Name: set.Spec.VirtualTargetClassName}, &class); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if class.ResourceVersion != d.classVersion {
		return reconcile.Result{}, nil
	}
	if err := r.observeInstance(ctx, in); err != nil {
		return reconcile.Result{}, err
	}

	now := r.clock.Now()
	p := &pass{
		set: &set, now: now, class: d.class, prov: d.prov, req: d.req, hash: d.hash,
		hooksCfg: d.hooksCfg, hooks: d.hooks, selector: d.selector, events: r.instanceEvents(key), requeue: &soonest{},
	}
	it := d.instances[e.UID]
	var errs []error
	if it.restart && !d.backingOff(now) {
		errs = append(errs, r.restartPods(ctx, p, in, it.broken))
	}
	start := !in.HasPod() && (it.start || d.immediate && in.Enabled() && in.SpecHash() == d.hash && d.selector.Matches(labels.Set(e.Labels)))
	if start && d.backingOff(now) {
		start = false
		p.requeueIn(d.backoffUntil.Sub(now))
	}
	ca, caProblem, err := r.caBundle(ctx, p)
	var res configureResult
	if err == nil && caProblem == "" {
		res, err = r.configure(ctx, p, ca, in, start)
	}
	if caProblem != "" || res.credMissing != "" {
		p.requeueIn(r.retryInterval) // neither ConfigMaps nor foreign Secrets are watched
	}
	errs = append(errs, err)
	res.version = d.version
	if r.memory.putResult(key, e.UID, res) {
		r.poke(ctx, r.setPokes, &set) // its conditions change
	}
	return reconcile.Result{RequeueAfter: p.requeue.get()}, errors.Join(errs...)
}

// observeInstance reads the instance's Pods, config Secret and (once labelled) credential
// Secret from the cache.
func (r *Reconciler) observeInstance(ctx context.Context, in *pool.Instance) error {
	e := in.Exporter
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(e.Namespace), client.MatchingFields{podControllerIndex: string(e.UID)}, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	for i := range pods.Items { // the index holds only the Pods e controls
		in.Pods = append(in.Pods, &pods.Items[i])
	}
	var s corev1.Secret
	switch err := r.client.Get(ctx, types.NamespacedName{Namespace: e.Namespace, Name: ConfigSecretName(e.Name)}, &s); {
	case err == nil && objects.IsControlledBy(&s, e.UID):
		in.ConfigSecret = &s
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	var cred corev1.Secret
	switch err := r.client.Get(ctx, types.NamespacedName{Namespace: e.Namespace, Name: e.Status.Credential.Name}, &cred); {
	case err == nil:
		in.Credential = &cred
	case !apierrors.IsNotFound(err):
		return err
	}
	return nil
}

// instanceEvents returns the events the instance reconciler collected for a set; its next
// pass records them with its own, so a scale-up still makes one event per pass and reason.
func (r *Reconciler) instanceEvents(key string) *passEvents {
	m := r.memory.instanceEv
	m.mu.Lock() // get or put, atomically
	defer m.mu.Unlock()
	s := m.setOf(key, true)
	if s.own == nil {
		s.own = &memoEntry[*passEvents]{v: &passEvents{}, write: m.clock.Add(1)}
	}
	return s.own.v
}

// takeInstanceEvents moves the instance reconciler's events of a set into a pass's.
func (r *Reconciler) takeInstanceEvents(key string, into *passEvents) {
	from, ok := r.memory.instanceEv.forSet(key)
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
