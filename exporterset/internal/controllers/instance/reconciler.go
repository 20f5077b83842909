// Package instance is the instance controller: it builds one instance, keyed by its
// Exporter. It creates its external target (for an external provisioner), labels its
// credential Secret, writes (and keeps in sync) its config Secret, and starts and restarts
// its Pods, as its set's last pass decided (the Intents on the contract Board). It is the
// only writer of those objects. Its workqueue serialises the reconciles of one Exporter and
// takes instances up in the order their events arrive, so the first instance created is the
// first finished, without any gate between creating and finishing. It imports no other
// controller.
package instance

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/cabundle"
	"github.com/exporterset/exporterset/exporterset/internal/contract"
	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/internal/state"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// Config is what the front gives the instance controller.
type Config struct {
	// Client reads from the manager's cache and writes as the instance controller's own
	// field manager.
	Client client.Client
	Clock  clock.PassiveClock
	Board  *contract.Board
	CA     *cabundle.Reader
	// Memory is where its memos are registered, beside the set controller's.
	Memory *state.Memory
	// Gate reports whether this process serves the provisioner in the namespace now; nil
	// serves every one.
	Gate func(namespace, provisioner string) bool
	// PokeSet queues the set's reconcile: what building one of its instances met changed.
	PokeSet func(ctx context.Context, set client.Object)
	// RetryInterval is how soon what is not watched (the CA ConfigMap, a foreign credential
	// Secret) is looked at again.
	RetryInterval time.Duration
}

// Reconciler is the instance controller.
type Reconciler struct {
	Config
	drivers *state.Memo[driversEntry] // per instance: enriched drivers
	configs *state.Memo[configEntry]  // per instance: the rendered config, with its token
	started *state.Memo[startedPod]   // per instance: the Pod this process created
}

// New returns the instance controller, its memos registered in c.Memory.
func New(c Config) *Reconciler {
	return &Reconciler{
		Config:  c,
		drivers: state.Register[driversEntry](c.Memory, "drivers"),
		configs: state.Register[configEntry](c.Memory, "configs"),
		started: state.Register[startedPod](c.Memory, "started"),
	}
}

// build is one reconcile of one instance: its set, the decisions it builds by, and the
// sinks of what it does (the set's events, the soonest requeue).
type build struct {
	set     *vtv1alpha1.ExporterSet
	key     string // the set's namespace/name
	now     time.Time
	d       *contract.Intents
	hosted  bool // d.Prov runs its exporters on hosts: the unit is the instance's Pod (unit.go)
	events  *eventlog.Batch
	requeue *state.Soonest
}

// Reconcile brings one instance along, once its set's intents are published: its external
// target when the set asks for one; then, once its credential is issued, its config Secret,
// its Pod restarts and its Pod.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	var e jumpstarterv1alpha1.Exporter
	if err := r.Client.Get(ctx, req.NamespacedName, &e); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	in := &pool.Instance{Exporter: &e}
	setName := objects.SetOwnerOf(&e)
	if setName == "" || in.Foreign() || objects.OutOfPool(in) {
		return reconcile.Result{}, nil // a retiring or quarantined instance keeps what it has until removed
	}
	var set vtv1alpha1.ExporterSet
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: e.Namespace, Name: setName}, &set); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	key := objects.SetKey(&set)
	d, ok := r.Board.Decisions(key)
	if !ok || set.DeletionTimestamp != nil || d.SetUID != set.UID || d.Generation != set.Generation || !objects.IsControlledBy(&e, set.UID) {
		return reconcile.Result{}, nil // the set's next pass decides, and pokes its instances
	}
	if r.Gate != nil && !r.Gate(set.Namespace, d.Class.Spec.Provisioner) {
		return reconcile.Result{}, nil // another process serves this provisioner now
	}
	var class vtv1alpha1.VirtualTargetClass
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: e.Namespace, Name: set.Spec.VirtualTargetClassName}, &class); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if class.ResourceVersion != d.ClassVersion {
		return reconcile.Result{}, nil
	}
	b := &build{set: &set, key: key, now: r.Clock.Now(), d: d, hosted: objects.Hosted(d.Prov), events: r.Board.EventsFor(key), requeue: &state.Soonest{}}
	it := d.Instances[e.UID]
	// The external target comes first: it needs no credential, and the Pod waits for it.
	targetErr, err := r.ensureTarget(ctx, b, &e, it)
	if err != nil || !in.Credentialed() {
		wait := waitOf(err)
		if it.CreateTarget {
			r.report(ctx, b, e.UID, contract.Result{WaitingCred: !in.Credentialed(), TargetErr: targetErr, TargetWait: wait})
		}
		if wait != "" {
			return reconcile.Result{RequeueAfter: targetRetry}, nil // reported; retried at a steady pace
		}
		return reconcile.Result{}, err
	}
	if err := r.observe(ctx, in); err != nil {
		return reconcile.Result{}, err
	}
	if b.hosted {
		withUnit(in, it)
	}
	var errs []error
	switch {
	case !it.Restart || d.BackingOff(b.now):
	case b.hosted:
		errs = append(errs, r.restartUnit(ctx, b, in, it))
	default:
		errs = append(errs, r.restartPods(ctx, b, in, it.Broken))
	}
	start := !in.HasPod() && d.StartsPod(it, in.Enabled(), in.SpecHash(), labels.Set(e.Labels))
	if start && d.BackingOff(b.now) {
		start = false
		b.requeue.In(d.BackoffUntil.Sub(b.now))
	}
	ca, caProblem, err := r.CA.Get(ctx, &set, d.Class)
	var res contract.Result
	if err == nil && caProblem == "" {
		res, err = r.configure(ctx, b, ca, in, start)
	}
	if caProblem != "" || res.CredMissing != "" {
		b.requeue.In(r.RetryInterval) // neither ConfigMaps nor foreign Secrets are watched
	}
	res.TargetErr = targetErr
	if res.TargetWait = waitOf(err); res.TargetWait != "" { // a hosted unit's create (startUnit)
		b.requeue.In(targetRetry) // reported; retried at a steady pace
		err = nil
	}
	errs = append(errs, err)
	r.report(ctx, b, e.UID, res)
	return reconcile.Result{RequeueAfter: b.requeue.Get()}, errors.Join(errs...)
}

// report puts what building the instance met on the Board, and pokes its set when that
// changed (its conditions change).
func (r *Reconciler) report(ctx context.Context, b *build, uid types.UID, res contract.Result) {
	res.Version = b.d.Version
	if r.Board.PutResult(b.key, uid, res) && r.PokeSet != nil {
		r.PokeSet(ctx, b.set)
	}
}

// observe reads the instance's Pods, config Secret and (once labelled) credential Secret
// from the cache.
func (r *Reconciler) observe(ctx context.Context, in *pool.Instance) error {
	e := in.Exporter
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(e.Namespace), client.MatchingFields{objects.PodControllerIndex: string(e.UID)}, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	for i := range pods.Items { // the index holds only the Pods e controls
		in.Pods = append(in.Pods, &pods.Items[i])
	}
	var s corev1.Secret
	switch err := r.Client.Get(ctx, types.NamespacedName{Namespace: e.Namespace, Name: objects.ConfigSecretName(e.Name)}, &s); {
	case err == nil && objects.IsControlledBy(&s, e.UID):
		in.ConfigSecret = &s
	case err != nil && !apierrors.IsNotFound(err):
		return err
	}
	var cred corev1.Secret
	switch err := r.Client.Get(ctx, types.NamespacedName{Namespace: e.Namespace, Name: e.Status.Credential.Name}, &cred); {
	case err == nil:
		in.Credential = &cred
	case !apierrors.IsNotFound(err):
		return err
	}
	return nil
}

// Retired forgets what the controller keeps of a retired instance now rather than at its
// set's next sweep: its rendered config holds the exporter's token.
func (r *Reconciler) Retired(set string, uid types.UID) {
	r.drivers.DropInstance(set, uid)
	r.configs.DropInstance(set, uid)
}

// RenderedConfigs returns every rendered exporter config the controller remembers: they
// hold tokens, so the memory tests check that they go with their instances.
func (r *Reconciler) RenderedConfigs() (out [][]byte) {
	r.configs.Each(func(_ string, _ types.UID, c configEntry) { out = append(out, c.yaml) })
	return out
}
