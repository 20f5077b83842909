package exporterset

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/cabundle"
	"github.com/exporterset/exporterset/exporterset/internal/contract"
	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
	"github.com/exporterset/exporterset/exporterset/internal/metrics"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/internal/state"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/provisioner"
)

// Reconciler is the set controller: it keeps ExporterSets' pools. The front
// (package exporterset) makes it with New and wires it with the other controllers.
type Reconciler struct {
	Config
	Shared

	client    client.Client
	apiReader client.Reader
	registry  *provisioner.Registry

	expectations  expectations  // expectations.go, a view of memory
	failureMemory failureMemory // failurememory.go, a view of memory
	pruned        prunedStatus  // pruned.go, a view of memory: status fields an older CRD drops
	indexed       bool          // the client's cache has setIndex (SetupWithManager)

	// memory is the set controller's memos, registered in Shared.Memory (memory.go).
	memory *memory
	// instancePokes and setPokes feed the instance and set controllers' queues from the
	// other side (intents.go); nil until SetupWithManager.
	instancePokes, setPokes chan event.GenericEvent
}

// Config is what the front's options set.
type Config struct {
	Recorder          events.EventRecorder
	Clock             clock.PassiveClock
	Metrics           *metrics.Metrics // nil: no metrics
	BackoffBase       time.Duration
	BackoffCap        time.Duration
	RegistrationGrace time.Duration
	UseExpectations   bool
	// ClaimUnknown reports ProvisionerUnknown on sets whose provisioner is not served here.
	ClaimUnknown bool
	// Gate says whether this process may act on a provisioner's sets in a namespace now;
	// nil acts on every set.
	Gate              func(namespace, provisioner string) bool
	Notice            *Notice // nil records none
	MaxConcurrent     int
	CreateParallelism int
	RetryInterval     time.Duration
	InventoryInterval time.Duration
	Name              string
	// Budgets: CapacityBudgets are served and may be read.
	Budgets bool
}

// DefaultConfig is the configuration before any option.
func DefaultConfig() Config {
	return Config{
		Recorder:          discardRecorder{},
		Clock:             clock.RealClock{},
		BackoffBase:       DefaultFailureBackoffBase,
		BackoffCap:        DefaultFailureBackoffCap,
		RegistrationGrace: DefaultRegistrationGrace,
		UseExpectations:   true,
		MaxConcurrent:     4,
		CreateParallelism: 64,
		RetryInterval:     10 * time.Second,
		InventoryInterval: DefaultInventoryInterval,
		Name:              "exporterset",
	}
}

// Shared is what the set controller shares with the other controllers, made by the front.
type Shared struct {
	// Memory is where every controller's memos are registered (internal/state).
	Memory *state.Memory
	// Board is where the set's pass and the instance controller meet (internal/contract).
	Board *contract.Board
	// CA reads the CA bundles both sides use (internal/cabundle).
	CA *cabundle.Reader
	// InstanceRetired tells the instance controller that an instance was retired: it
	// forgets the instance's rendered config (it holds the token) at once.
	InstanceRetired func(set string, uid types.UID)
}

// ownWrites is the status this reconciler last wrote, per set.
func (r *Reconciler) ownWrites() ownWrites { return ownWrites{r.memory.own} }

// describeTTL bounds how long a provisioner's Description (its default images) is reused:
// a plugin restarted with a new version is noticed within it.
const describeTTL = time.Minute

// New returns the set controller, reading through c (normally the manager's cached client),
// re-reading through apiReader (uncached) before it deletes anything, and rendering
// instances with the provisioners of registry.
func New(c client.Client, apiReader client.Reader, registry *provisioner.Registry, cfg Config, shared Shared) *Reconciler {
	mem := newMemory(shared.Memory)
	return &Reconciler{
		Config:        cfg,
		Shared:        shared,
		client:        c,
		apiReader:     apiReader,
		registry:      registry,
		memory:        mem,
		expectations:  expectations{mem.expectations},
		pruned:        prunedStatus{mem.pruned},
		failureMemory: failureMemory{mem.failures, mem.instFailures},
	}
}

// Reconcile moves one ExporterSet's pool towards its spec and writes its status once.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var set vtv1alpha1.ExporterSet
	if err := r.client.Get(ctx, req.NamespacedName, &set); err != nil {
		if apierrors.IsNotFound(err) {
			// Its external instances' remote resources go with it (their finalizers hold
			// the Exporters until then).
			again, ferr := r.finalizeOrphans(ctx, req.Namespace, req.Name)
			r.forget(req.NamespacedName)
			if again && ferr == nil {
				return ctrl.Result{RequeueAfter: r.RetryInterval}, nil
			}
			return ctrl.Result{}, ferr
		}
		return ctrl.Result{}, err
	}
	if set.DeletionTimestamp != nil {
		return ctrl.Result{}, nil // the garbage collector removes the instances
	}
	r.pruned.restore(&set)
	p := &pass{set: &set, now: r.Clock.Now(), events: &eventlog.Batch{}, requeue: &state.Soonest{}}
	defer func() {
		r.Board.TakeEvents(req.String(), p.events)
		p.events.Flush(r.Recorder, p.set)
	}()
	res, skip, err := r.reconcile(ctx, p)
	if !skip {
		r.noticeOnce(p.set)
	}
	if skip {
		r.withdraw(req.String()) // gated, not served here, or a partial view: build nothing new
		return ctrl.Result{RequeueAfter: p.requeue.Get()}, err
	}
	if werr := r.writeStatus(ctx, p, res); werr != nil {
		if err == nil && apierrors.IsConflict(werr) {
			// The cache had not caught up with our last write: not an error, just again.
			return ctrl.Result{RequeueAfter: 100 * time.Millisecond}, nil
		}
		err = errors.Join(err, werr)
	}
	if err != nil && res.external.unreachable != nil {
		// The remote end did not answer: the set is held, its status says so, and it is
		// polled (observeExternal asked for externalPollInterval). The remote calls that
		// failed with it must not become the pass's error: the workqueue would back the set
		// off instead, doubling with every failed pass (every watch event during an outage
		// adds one) up to a quarter of an hour, and the set would stay held long after the
		// remote end answered again.
		logf.FromContext(ctx).Info("the external targets' remote end does not answer; polling it", "error", err.Error())
		err = nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	p.requeueIn(resyncInterval)
	return ctrl.Result{RequeueAfter: p.requeue.Get()}, nil
}

// forget drops everything of a deleted set: its record in memory (every memo, so every
// store: expectations, failures, pruned status, start-ups, the metrics' bookkeeping and
// the rest) and its metric series.
func (r *Reconciler) forget(set types.NamespacedName) {
	r.memory.Forget(set.String())
	r.Metrics.Forget(set.Namespace, set.Name)
}

// resyncInterval is how often a quiet set is looked at anyway: what is not watched (the CA
// ConfigMap) reaches it within this time.
const resyncInterval = 5 * time.Minute

// reconcile runs the pass's steps (see pass). It returns skip=true when the status must be
// left untouched: the set belongs to a provisioner this controller does not serve, or what
// it saw is incomplete.
func (r *Reconciler) reconcile(ctx context.Context, p *pass) (res passResult, skip bool, err error) {
	set := p.set
	res.act.seq = set.Status.InstanceSequence
	res.blocked, skip, err = r.inputs(ctx, p)
	if skip || err != nil {
		return res, true, err
	}
	if set.Status.ObservedGeneration == 0 {
		traceFirst(ctx, stepFirstPass)
	}
	var policyProblems []policyProblem
	p.policy, policyProblems = reusePolicyOf(set, p.class)

	hardware, hwBlocker := hardwareSelectorOf(set, p.class)
	mark := r.memory.Mark()
	obs, err := r.observe(ctx, set, p.selector, hardware)
	if err != nil {
		return res, true, err // a partial view must not become status
	}
	r.memory.Sweep(keyOf(set), obs.uids(), mark)
	// Instances that failed their check leave service first (quarantine.go).
	breaker, obs, qErr := r.quarantine(ctx, p, obs)
	r.surfacePolicyProblems(p, policyProblems)

	if res.blocked == nil && !p.selector.Matches(labels.Set(objects.InstanceLabels(set, ""))) {
		res.blocked = blocked(vtv1alpha1.ReasonSelectorMismatch, "spec.selector %q does not match the template labels %v: created instances would not be counted", p.selector.String(), set.Spec.Template.Metadata.Labels)
	}
	if res.blocked == nil {
		res.blocked = hwBlocker
	}
	var reqErr error // reported after the status is computed: a failed request must not zero it
	if res.blocked == nil {
		res.blocked, reqErr = r.prepareRequest(ctx, p)
	}
	if res.blocked == nil && reqErr == nil {
		res.external, reqErr = r.observeExternal(ctx, p, obs)
		if objects.Hosted(p.prov) {
			obs = withUnits(obs, res.external.states)
		}
	}
	if res.blocked == nil && r.failureMemory.failing(keyOf(set)) {
		// The CA is one of the inputs failures are counted against (diagnose): a failing
		// set reads it (at most once per cabundle.TTL) so that a fixed bundle ends the backoff.
		_, _, _ = r.CA.Get(ctx, p.set, p.class)
	}
	res.health = r.diagnose(p, obs, res.external.states, r.CA.Known(keyOf(set)))
	if res.health.backoff.Active(p.now) {
		p.requeueIn(cabundle.TTL)
	}
	res.counts = pool.ComputeStatus(obs.Instances, res.health.problems)
	res.counts.HardwareAvailableReplicas = int32(len(obs.Boards))
	res.boards, res.boardPolicy = obs.Boards, obs.BoardPolicy
	ms := r.metricsOf(keyOf(set))
	r.Metrics.ObserveStatus(set.Namespace, set.Name, ms, res.counts, obs.Instances, res.health.problems, p.now)
	r.Metrics.ObserveFailures(set.Namespace, set.Name, res.health.backoff, p.now)
	r.Metrics.ObserveSLO(set.Namespace, set.Name, ms, metrics.SLOInput{Now: p.now, Instances: obs.Instances, Problems: res.health.problems, Leases: obs.Leases,
		Waiting: obs.WaitingLeases, Binding: p.binding(), Hash: p.hash})
	res.reuse = reuseResultOf(breaker, policyProblems, obs, pool.QuarantinePlan{})
	if reqErr = errors.Join(reqErr, qErr); reqErr != nil {
		return res, false, reqErr
	}
	if res.blocked != nil {
		r.withdraw(keyOf(set)) // its instances get nothing new either
		return res, false, nil // nothing is created or deleted while the set is blocked
	}

	var expected int32
	if r.UseExpectations {
		// From here on the pass sees its own retirements, which the cache may not show yet.
		expected, obs = r.expectations.reconcile(keyOf(set), p.now, obs)
	}
	if p.gov, err = r.governanceOf(ctx, set, int32(len(obs.Instances)+len(obs.Strays))+expected, pool.Outdated(obs.Instances, p.hash)); err != nil {
		return res, false, err
	}
	res.gov = p.gov
	var hold time.Time
	if res.external.holds() {
		hold = p.now.Add(externalRetry) // the remote end's state is unknown: create and start nothing until it answers
	}
	in := planInput(p, obs, res.health, expected, r.bookingLead(p, obs), hold, int32(r.CreateParallelism))
	in.TargetKept = keptTargets(p, obs.Instances, res.external.states)
	qp := r.planQuarantine(p, in)
	res.reuse = reuseResultOf(breaker, policyProblems, obs, qp)
	in = withQuarantine(in, qp, breaker)
	plan := pool.PlanScale(in)
	res.plan = &plan
	p.requeueIn(plan.RequeueAfter)
	res.act, err = r.act(ctx, p, obs, res.plan, res.act.seq, in.BackoffUntil, res.health.problems, res.external.states)
	return res, false, err
}

// inputs reads the set's selector, class and provisioner into p. A missing or bad one
// blocks the set; skip=true when the class names a provisioner this controller leaves to
// another.
func (r *Reconciler) inputs(ctx context.Context, p *pass) (b *blocker, skip bool, err error) {
	set := p.set
	sel, selErr := metav1.LabelSelectorAsSelector(&set.Spec.Selector)
	if selErr != nil {
		b = blocked(vtv1alpha1.ReasonInvalidSelector, "spec.selector: %v", selErr)
		sel = labels.Nothing()
	}
	p.selector = sel

	var class vtv1alpha1.VirtualTargetClass
	err = r.client.Get(ctx, types.NamespacedName{Namespace: set.Namespace, Name: set.Spec.VirtualTargetClassName}, &class)
	switch {
	case apierrors.IsNotFound(err):
		if r.gated(p, "") {
			return b, true, nil
		}
		if b == nil {
			b = blocked(vtv1alpha1.ReasonClassNotFound, "VirtualTargetClass %q not found in namespace %s", set.Spec.VirtualTargetClassName, set.Namespace)
		}
		return b, false, nil
	case err != nil:
		return b, true, fmt.Errorf("getting VirtualTargetClass: %w", err)
	}
	p.class = &class
	prov, ok := r.registry.Get(class.Spec.Provisioner)
	// An unknown provisioner's sets get a status (ProvisionerUnknown) only when this process
	// claims them, so only then does it ask the gate about them.
	if (ok || r.ClaimUnknown) && r.gated(p, class.Spec.Provisioner) {
		logf.FromContext(ctx).V(1).Info("another process holds this provisioner's lock; leaving the set alone", "provisioner", class.Spec.Provisioner)
		return b, true, nil
	}
	if !ok {
		if !r.ClaimUnknown {
			logf.FromContext(ctx).V(1).Info("provisioner not served here; leaving the set alone", "provisioner", class.Spec.Provisioner)
			return b, true, nil
		}
		if b == nil {
			b = blocked(vtv1alpha1.ReasonProvisionerUnknown, "provisioner %q of class %q is not served by this controller (serving %v)", class.Spec.Provisioner, class.Name, r.registry.Names())
		}
	}
	p.prov = prov
	return b, false, nil
}

// planInput is PlanScale's input for a pass: the spec, the observation and its diagnosis,
// the lead time for bookings, hold (until when the remote end's silence holds creates, zero
// for none) and the create window's limit (pool/pacing.go).
func planInput(p *pass, obs *observation, h health, expected int32, lead time.Duration, hold time.Time, limit int32) pool.PlanInput {
	s := p.set.Spec
	in := pool.PlanInput{
		MinReplicas:          s.MinReplicas,
		MinAvailableReplicas: s.MinAvailableReplicas,
		Recycle:              s.RecycleStrategy,
		Binding:              p.class.Spec.BindingMode,
		SpecHash:             p.hash,
		Instances:            obs.Instances,
		Problems:             h.problems,
		Expected:             expected,
		Others:               int32(len(obs.Strays)),
		Demand:               int32(len(obs.WaitingLeases)),
		FreeBoards:           int32(len(obs.Boards)),
		Bookings:             obs.Bookings,
		Now:                  p.now,
		MaxUseCount:          p.policy.maxUseCount,
		MaxIdleAge:           p.policy.maxIdleAge,
		BudgetCeiling:        p.gov.ceiling,
		LeadTime:             lead,
		CreateLimit:          limit,
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
	if h.backoff.Failures > 0 {
		in.BackoffUntil = h.backoff.Until
	}
	if hold.After(in.BackoffUntil) {
		in.BackoffUntil = hold
	}
	return in
}

func keyOf(set *vtv1alpha1.ExporterSet) string { return objects.SetKey(set) }
