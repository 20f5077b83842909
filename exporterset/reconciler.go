package exporterset

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// Reconciler keeps ExporterSets' pools. Create it with NewReconciler and add it to a manager
// with SetupWithManager.
type Reconciler struct {
	client    client.Client
	apiReader client.Reader
	registry  *provisioner.Registry

	recorder          events.EventRecorder
	clock             clock.PassiveClock
	metrics           *metrics
	expectations      *expectations
	startedPods       *startedPods
	failureMemory     *failureMemory
	backoffBase       time.Duration
	backoffCap        time.Duration
	registrationGrace time.Duration
	useExpectations   bool
	claimUnknown      bool
	maxConcurrent     int
	createParallelism int
	retryInterval     time.Duration
	name              string
	indexed           bool // the client's cache has setIndex (SetupWithManager)

	describeMu sync.Mutex
	describes  map[string]describeEntry
	drivers    sync.Map // exporter namespace/name -> driversEntry
	configs    sync.Map // exporter namespace/name -> configEntry
	caMemo     sync.Map // namespace/configmap/key -> caEntry
	validated  sync.Map // set namespace/name -> validationEntry
	own        ownWrites

	// fast, fastEv and instanceLocks serve the fast path (fastpath.go).
	fast          sync.Map // set namespace/name -> fastEntry
	fastEv        sync.Map // set namespace/name -> *passEvents
	instanceLocks instanceLocks
}

type driversEntry struct {
	hash string
	json []byte
}

// describeTTL bounds how long a provisioner's Description (its default images) is reused:
// a plugin restarted with a new version is noticed within it.
const describeTTL = time.Minute

// NewReconciler returns a Reconciler that reads through c (normally the manager's cached
// client), re-reads through apiReader (uncached) before it deletes anything, and renders
// instances with the provisioners of registry.
func NewReconciler(c client.Client, apiReader client.Reader, registry *provisioner.Registry, opts ...Option) *Reconciler {
	r := &Reconciler{
		client:            c,
		apiReader:         apiReader,
		registry:          registry,
		recorder:          discardRecorder{},
		clock:             clock.RealClock{},
		expectations:      newExpectations(),
		startedPods:       newStartedPods(),
		failureMemory:     newFailureMemory(),
		backoffBase:       DefaultFailureBackoffBase,
		backoffCap:        DefaultFailureBackoffCap,
		registrationGrace: DefaultRegistrationGrace,
		useExpectations:   true,
		maxConcurrent:     4,
		createParallelism: 64,
		retryInterval:     10 * time.Second,
		name:              "exporterset",
		describes:         map[string]describeEntry{},
	}
	for _, o := range opts {
		o(r)
	}
	return r
}

// pass is the state of one reconcile of one set.
type pass struct {
	set      *vtv1alpha1.ExporterSet
	orig     *vtv1alpha1.ExporterSet
	now      time.Time
	class    *vtv1alpha1.VirtualTargetClass
	prov     provisioner.Provisioner
	req      *provisioner.Request
	hash     string
	selector labels.Selector
	obs      *Observation
	counts   Counts
	plan     *Plan
	// failures and backoff are the pool's diagnosed failures and the set's failure backoff.
	failures failureSummary
	backoff  backoffState
	seq      int64

	ca []byte

	// blocked is why the set cannot act at all (class missing, invalid parameters...).
	blocked *blocker
	// Problems met while acting, for conditions.
	caProblem        string
	credMissing      []string
	waitingCreds     int
	createErr        error
	podErr           error
	created, retired int
	requeue          time.Duration
	// events are the pass's Normal events, recorded aggregated when it ends.
	events *passEvents
}

type blocker struct{ reason, message string }

func (p *pass) block(reason, format string, args ...any) {
	p.blocked = &blocker{reason: reason, message: fmt.Sprintf(format, args...)}
}

func (p *pass) requeueIn(d time.Duration) {
	if d > 0 && (p.requeue == 0 || d < p.requeue) {
		p.requeue = d
	}
}

// Reconcile moves one ExporterSet's pool towards its spec and writes its status once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var set vtv1alpha1.ExporterSet
	if err := r.client.Get(ctx, req.NamespacedName, &set); err != nil {
		if apierrors.IsNotFound(err) {
			r.expectations.forget(req.String())
			r.metrics.forget(req.Namespace, req.Name)
			r.validated.Delete(req.String())
			r.own.forget(req.String())
			r.failureMemory.forget(req.String())
			r.fast.Delete(req.String())
			r.fastEv.Delete(req.String())
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if set.DeletionTimestamp != nil {
		return ctrl.Result{}, nil // the garbage collector removes the instances
	}
	p := &pass{set: &set, orig: set.DeepCopy(), now: r.clock.Now(), seq: set.Status.InstanceSequence, events: &passEvents{}}
	defer func() {
		r.takeFastEvents(req.String(), p.events)
		p.events.flush(r.recorder, p.set)
	}()
	skip, err := r.reconcile(ctx, p)
	if skip {
		return ctrl.Result{}, err
	}
	if werr := r.writeStatus(ctx, p); werr != nil {
		if err == nil && apierrors.IsConflict(werr) {
			// The cache had not caught up with our last write: not an error, just again.
			return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
		}
		err = errors.Join(err, werr)
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	p.requeueIn(resyncInterval)
	return ctrl.Result{RequeueAfter: p.requeue}, nil
}

// resyncInterval is how often a quiet set is looked at anyway: what is not watched (the CA
// ConfigMap) reaches it within this time.
const resyncInterval = 5 * time.Minute

// reconcile runs observe -> compute status -> plan -> act. It returns skip=true when the
// status must be left untouched: the set belongs to a provisioner this controller does not
// serve, or what it saw is incomplete.
func (r *Reconciler) reconcile(ctx context.Context, p *pass) (skip bool, err error) {
	log := logf.FromContext(ctx)
	set := p.set

	sel, selErr := metav1.LabelSelectorAsSelector(&set.Spec.Selector)
	if selErr != nil {
		p.block(vtv1alpha1.ReasonInvalidSelector, "spec.selector: %v", selErr)
		sel = labels.Nothing()
	}
	p.selector = sel

	var class vtv1alpha1.VirtualTargetClass
	err = r.client.Get(ctx, types.NamespacedName{Namespace: set.Namespace, Name: set.Spec.VirtualTargetClassName}, &class)
	switch {
	case apierrors.IsNotFound(err):
		if p.blocked == nil {
			p.block(vtv1alpha1.ReasonClassNotFound, "VirtualTargetClass %q not found in namespace %s", set.Spec.VirtualTargetClassName, set.Namespace)
		}
	case err != nil:
		return true, fmt.Errorf("getting VirtualTargetClass: %w", err)
	default:
		p.class = &class
		prov, ok := r.registry.Get(class.Spec.Provisioner)
		if !ok {
			if !r.claimUnknown {
				log.V(1).Info("provisioner not served here; leaving the set alone", "provisioner", class.Spec.Provisioner)
				return true, nil
			}
			if p.blocked == nil {
				p.block(vtv1alpha1.ReasonProvisionerUnknown, "provisioner %q of class %q is not served by this controller (serving %v)", class.Spec.Provisioner, class.Name, r.registry.Names())
			}
		}
		p.prov = prov
	}

	p.obs, err = r.observe(ctx, set, sel)
	if err != nil {
		return true, err // a partial view must not become status
	}
	r.diagnose(p)
	p.counts = ComputeStatus(p.obs.Instances)
	r.metrics.observeStatus(set.Namespace, set.Name, p.counts, p.obs.Instances, p.now)
	r.metrics.observeFailures(set.Namespace, set.Name, p.backoff, p.now)

	if p.blocked == nil && !sel.Matches(labels.Set(instanceLabels(set, ""))) {
		p.block(vtv1alpha1.ReasonSelectorMismatch, "spec.selector %q does not match the template labels %v: created instances would not be counted", sel.String(), set.Spec.Template.Metadata.Labels)
	}
	if p.blocked == nil {
		if err := r.prepareRequest(ctx, p); err != nil {
			return false, err
		}
	}
	if p.blocked != nil {
		r.rememberFast(p) // forgets: the fast path must not start instances either
		return false, nil // nothing is created or deleted while the set is blocked
	}

	var expected int32
	if r.useExpectations {
		expected = r.expectations.reconcile(keyOf(set), p.now, p.obs)
	}
	p.plan = r.plan(p, expected)
	r.rememberFast(p)
	p.requeueIn(p.plan.RequeueAfter)
	return false, r.act(ctx, p)
}

func (r *Reconciler) plan(p *pass, expected int32) *Plan {
	s := p.set.Spec
	in := PlanInput{
		MinReplicas:          s.MinReplicas,
		MinAvailableReplicas: s.MinAvailableReplicas,
		Recycle:              s.RecycleStrategy,
		Binding:              p.class.Spec.BindingMode,
		SpecHash:             p.hash,
		Instances:            p.obs.Instances,
		Expected:             expected,
		Demand:               int32(len(p.obs.WaitingLeases)),
		Now:                  p.now,
	}
	if s.MaxReplicas != nil {
		in.MaxReplicas = *s.MaxReplicas
	}
	if s.ScaleDownCooldown != nil {
		in.Cooldown = s.ScaleDownCooldown.Duration
	}
	if t := p.set.Status.SurplusSince; t != nil {
		since := t.Time
		in.SurplusSince = &since
	}
	if p.backoff.Failures > 0 {
		in.BackoffUntil = p.backoff.Until
	}
	plan := PlanScale(in)
	return &plan
}

// writeStatus writes the status once, and only when it changed. It builds on the set as
// this reconciler last wrote it when the cache still shows the version before that write.
// The pass itself works from the cache: its instance sequence must not run ahead of the
// Exporters it sees, or a stale Exporter view would get fresh names, not AlreadyExists.
func (r *Reconciler) writeStatus(ctx context.Context, p *pass) error {
	orig := r.own.latest(p.orig)
	st := p.counts
	st.Selector = p.selector.String()
	st.ObservedGeneration = p.set.Generation
	st.InstanceSequence = max(p.seq, orig.Status.InstanceSequence)
	st.SurplusSince = p.set.Status.SurplusSince
	if p.plan != nil {
		st.SurplusSince = nil
		if p.plan.SurplusSince != nil {
			t := metav1.NewTime(*p.plan.SurplusSince)
			st.SurplusSince = &t
		}
	}
	st.Conditions = append([]metav1.Condition(nil), orig.Status.Conditions...)
	for _, c := range r.conditions(p) {
		if reason, action, byReason := problemEvent(p, c); reason != "" {
			// One event per new problem, not one per reconcile. A failure's message moves
			// with its counts and backoff clock: only a new reason is a new problem.
			old := apimeta.FindStatusCondition(orig.Status.Conditions, c.Type)
			if old == nil || old.Reason != c.Reason || !byReason && old.Message != c.Message {
				r.recorder.Eventf(p.set, nil, "Warning", reason, action, "%s", c.Message)
			}
		}
		apimeta.SetStatusCondition(&st.Conditions, c)
	}
	if statusEqual(orig.Status, st) {
		return nil
	}
	p.set.ResourceVersion = orig.ResourceVersion
	p.set.Status = st
	// An update, not a merge patch: a patch would leave out counters equal to the cached
	// zero values, which the schema requires on the first write. The resourceVersion makes
	// it optimistic: a newer set (or a stale cache) fails it, and the next pass redoes it.
	if err := r.client.Status().Update(ctx, p.set); err != nil {
		if apierrors.IsConflict(err) {
			return fmt.Errorf("status changed while reconciling, will retry: %w", err)
		}
		return fmt.Errorf("writing status: %w", err)
	}
	r.own.wrote(orig.ResourceVersion, p.set)
	return nil
}

func keyOf(set *vtv1alpha1.ExporterSet) string { return set.Namespace + "/" + set.Name }

// problemEvent is the event (reason and action) a Degraded condition gets when it is new:
// the set is blocked, it waits for something a person must provide, or its instances fail
// (the event's reason is then the condition's, e.g. ImagePullFailed; byReason says only a
// change of reason is new). Other problems (failed creates) record their own events.
func problemEvent(p *pass, c metav1.Condition) (reason, action string, byReason bool) {
	if c.Type != vtv1alpha1.ConditionDegraded {
		return "", "", false
	}
	switch {
	case p.blocked != nil && c.Reason == vtv1alpha1.ReasonProvisionerError:
		return EventProvisionerError, "Reconcile", false
	case p.blocked != nil:
		return EventInvalidSpec, "Reconcile", false
	case c.Reason == vtv1alpha1.ReasonCABundleMissing || c.Reason == vtv1alpha1.ReasonCredentialsMissing:
		return EventWaiting, "Configure", false
	case isFailureReason(c.Reason):
		return c.Reason, "Observe", true
	}
	return "", "", false
}

// discardRecorder is the default events.EventRecorder: events go nowhere.
type discardRecorder struct{}

func (discardRecorder) Eventf(_, _ runtime.Object, _, _, _, _ string, _ ...any) {}

func statusEqual(a, b vtv1alpha1.ExporterSetStatus) bool { return apiequality.Semantic.DeepEqual(a, b) }
