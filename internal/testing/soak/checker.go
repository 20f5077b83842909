package soak

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/fakeprov"
	"github.com/exporterset/exporterset/internal/testing/testenv"
)

// Violation is a broken invariant.
type Violation struct {
	At        time.Time
	Invariant string
	Object    string // namespace-local name of the object concerned, if one
	Detail    string
}

func (v Violation) String() string {
	return fmt.Sprintf("%s %s (%s): %s", v.At.Format("15:04:05.000"), v.Invariant, v.Object, v.Detail)
}

// deletionJudgeDelay is how long the checker waits before judging why an Exporter was
// deleted: its Pods' last phases arrive on another watch, which may lag a little.
const deletionJudgeDelay = 2 * time.Second

// checkInterval is how often the ceiling invariants are evaluated.
const checkInterval = 200 * time.Millisecond

// Checker watches one namespace through its own informers, shared with nothing, and records
// every broken invariant with a time stamp. The safety invariants (no leased Exporter is
// disabled or deleted by the controller; no Exporter is deleted unless it was retired or
// exited) and the Available status rule are judged on every watch event, so they see each
// intermediate state; the ceiling invariants, the live Available cross-check and the churn
// bound are evaluated a few times a second; Final checks the state after the walk.
type Checker struct {
	ns      string
	cache   cache.Cache
	direct  client.Client
	history *History
	opts    CeilingOptions

	mu         sync.Mutex
	violations []Violation
	failed     chan struct{}
	trackers   map[string]*ceilingTracker // set name
	excused    map[string]time.Time       // set name ("" for all) -> until
	podSeen    map[types.UID]podSighting  // Exporter UID -> its Pods' last phases
	pending    []pendingDeletion
	deletions  int
	evaluated  int

	remotes func() []fakeprov.Remote // the external fake's remote side (final_remote.go)

	cw *ceilingWatch    // the watched ceiling's memory (ceilingwatch.go)
	fw *failureWatch    // the failure invariants' memory (failwatch.go)
	rw *rollWatch       // the roll floor's memory (rollwatch.go)
	qw *quarantineWatch // the quarantine invariant's memory (quarantinewatch.go)
	bw *budgetWatch     // the CapacityBudget's watched count (budgetwatch.go)
	rf *refuseWatch     // the refusal invariant's memory (refusewatch.go)

	starving     map[string]*starveClock // budget/lease -> its starvation clock (budgetstarve.go)
	starveJudged int
	starveNear   int
}

// podSighting says when an Exporter's Pods were last seen running or pending, and when last
// seen completed: an instance exited if the latter is the later.
type podSighting struct{ active, terminal time.Time }

type pendingDeletion struct {
	at       time.Time
	name     string
	uid      types.UID
	retiring bool // retiring or quarantined: removed on purpose
}

// NewChecker returns a Checker for namespace ns. Start it before the walk.
func NewChecker(cfg *rest.Config, ns string, history *History, opts CeilingOptions) (*Checker, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "soak-checker"
	scheme := testenv.NewScheme()
	c, err := cache.New(cfg, cache.Options{Scheme: scheme, DefaultNamespaces: map[string]cache.Config{ns: {}}})
	if err != nil {
		return nil, err
	}
	direct, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return &Checker{
		ns: ns, cache: c, direct: direct, history: history, opts: opts,
		failed:   make(chan struct{}),
		trackers: map[string]*ceilingTracker{},
		excused:  map[string]time.Time{},
		podSeen:  map[types.UID]podSighting{},
		cw:       newCeilingWatch(),
		fw:       newFailureWatch(),
		rw:       newRollWatch(),
		qw:       newQuarantineWatch(),
		bw:       newBudgetWatch(),
		rf:       newRefuseWatch(),
		starving: map[string]*starveClock{},
	}, nil
}

// Start runs the informers and the periodic checks until ctx ends; it returns once the
// informers are synced.
func (c *Checker) Start(ctx context.Context) error {
	exporters, err := c.cache.GetInformer(ctx, &jumpstarterv1alpha1.Exporter{})
	if err != nil {
		return err
	}
	if _, err := exporters.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: c.exporterUpdated,
		DeleteFunc: func(obj any) { c.exporterDeleted(ctx, obj) },
	}); err != nil {
		return err
	}
	pods, err := c.cache.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		return err
	}
	if _, err := pods.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    c.podSeenNow,
		UpdateFunc: func(_, obj any) { c.podSeenNow(obj) },
	}); err != nil {
		return err
	}
	for _, obj := range []client.Object{&vtv1alpha1.ExporterSet{}, &vtv1alpha1.VirtualTargetClass{}, &jumpstarterv1alpha1.Lease{}, &corev1.Secret{}} {
		if _, err := c.cache.GetInformer(ctx, obj); err != nil {
			return err
		}
	}
	if err := c.watchCeilings(ctx); err != nil {
		return err
	}
	if err := c.watchFailures(ctx); err != nil {
		return err
	}
	if err := c.watchRolls(ctx); err != nil {
		return err
	}
	if err := c.watchQuarantine(ctx); err != nil {
		return err
	}
	if err := c.watchBudgets(ctx); err != nil {
		return err
	}
	if err := c.watchRefusals(ctx); err != nil {
		return err
	}
	go func() { _ = c.cache.Start(ctx) }()
	if !c.cache.WaitForCacheSync(ctx) {
		return errors.New("soak: checker caches did not sync")
	}
	go c.loop(ctx)
	return nil
}

// Failed is closed at the first violation.
func (c *Checker) Failed() <-chan struct{} { return c.failed }

// Violations returns the violations so far, oldest first.
func (c *Checker) Violations() []Violation {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Violation(nil), c.violations...)
}

// Stats returns how many Exporter deletions were judged and how many ceiling evaluations ran.
func (c *Checker) Stats() (deletions, evaluations int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.deletions, c.evaluated
}

// Report records a violation. The checker calls it; the self-test calls it too, to show
// that a violation stops the walk and fails the run.
func (c *Checker) Report(invariant, object, format string, args ...any) {
	v := Violation{At: time.Now(), Invariant: invariant, Object: object, Detail: fmt.Sprintf(format, args...)}
	c.history.Record(KindViolation, "%s", v)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.violations = append(c.violations, v)
	if len(c.violations) == 1 {
		close(c.failed)
	}
}

// Excuse suspends the "stays above maxReplicas" timer of set ("" for every set) for d: the
// walk calls it when it makes the reconciler unable to act (class deleted, controller
// stopped, plugin killed, provisioner failing). The other invariants are never excused.
func (c *Checker) Excuse(set string, d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	until := time.Now().Add(d)
	if until.After(c.excused[set]) {
		c.excused[set] = until
	}
}

// excuseUntil sets set's excuse to end at until, shortening it if needed.
func (c *Checker) excuseUntil(set string, until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.excused[set] = until
}

func (c *Checker) isExcused(set string, now time.Time) bool {
	return now.Before(c.excused[set]) || now.Before(c.excused[""])
}

// exporterUpdated catches the reconciler disabling a leased Exporter: its retire patch adds
// the retiring annotation (and spec.enabled=false) to the object it decided on, leaving the
// status untouched, so the update that adds the annotation shows whether a lease held it.
// A person's disable (no annotation) is not the controller's.
func (c *Checker) exporterUpdated(oldObj, newObj any) {
	o, ok1 := oldObj.(*jumpstarterv1alpha1.Exporter)
	n, ok2 := newObj.(*jumpstarterv1alpha1.Exporter)
	if !ok1 || !ok2 {
		return
	}
	_, wasRetiring := o.Annotations[retiringKey]
	_, isRetiring := n.Annotations[retiringKey]
	if !wasRetiring && isRetiring && !n.IsEnabled() && leaseOf(o) != "" && leaseOf(o) == leaseOf(n) {
		c.Report(InvLeasedDisabled, n.Name, "the controller disabled %s (retiring) while lease %s held it (resourceVersion %s -> %s)",
			n.Name, leaseOf(n), o.ResourceVersion, n.ResourceVersion)
	}
}

// exporterDeleted judges a deletion: a leased Exporter must never be deleted (the delete
// event carries the last state); a Lease must not be left holding a deleted Exporter; and an
// Exporter must have been retired or have exited first (judged a little later, once the
// Pods' watch has caught up).
func (c *Checker) exporterDeleted(ctx context.Context, obj any) {
	e, ok := obj.(*jumpstarterv1alpha1.Exporter)
	if !ok {
		// A tombstone after a re-list: the last state is unknown, so it is not judged.
		c.history.Record(KindNote, "checker: Exporter deletion seen only as a tombstone: not judged")
		return
	}
	if l := leaseOf(e); l != "" {
		c.Report(InvLeasedDeleted, e.Name, "%s was deleted while lease %s held it (last resourceVersion %s)", e.Name, l, e.ResourceVersion)
	}
	c.checkLeasesOf(ctx, e)
	// A quarantined instance (marked and disabled) is removed by the quarantine's rules (its
	// TTL, the max-quarantined cap, a waiting lease at the ceiling) without retiring first.
	v := viewOf(e, nil)
	c.mu.Lock()
	c.pending = append(c.pending, pendingDeletion{at: time.Now(), name: e.Name, uid: e.UID, retiring: v.retiring || v.quarantined})
	c.mu.Unlock()
}

// checkLeasesOf reads, from the API server, the Leases assigned to a just-deleted Exporter.
// Ending is final and a Lease ends before its Exporter's leaseRef is cleared, so one that has
// not ended now had not ended when the Exporter was deleted: the client lost its exporter.
func (c *Checker) checkLeasesOf(ctx context.Context, e *jumpstarterv1alpha1.Exporter) {
	var leases jumpstarterv1alpha1.LeaseList
	if err := c.direct.List(ctx, &leases, client.InNamespace(c.ns)); err != nil {
		if ctx.Err() == nil {
			c.history.Record(KindNote, "checker: listing leases after deletion of %s: %v", e.Name, err)
		}
		return
	}
	for i := range leases.Items {
		l := &leases.Items[i]
		if l.Status.Ended || l.Status.ExporterRef == nil || l.Status.ExporterRef.Name != e.Name || l.Status.BeginTime == nil {
			continue
		}
		if uid, ok := controllerUID(l, "Exporter"); ok && uid != e.UID {
			continue // assigned to a namesake
		}
		if l.Status.BeginTime.Time.Before(e.CreationTimestamp.Time) {
			continue // an earlier Exporter of the same name
		}
		c.Report(InvLeaseLost, e.Name, "%s was deleted while lease %s (begun %s) was assigned to it and had not ended",
			e.Name, l.Name, l.Status.BeginTime.UTC().Format(time.RFC3339))
	}
}

func (c *Checker) podSeenNow(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.DeletionTimestamp != nil {
		return
	}
	uid, ok := controllerUID(p, "Exporter")
	if !ok {
		return
	}
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.podSeen[uid]
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		s.terminal = now
	} else {
		s.active = now
	}
	c.podSeen[uid] = s
}

func (c *Checker) loop(ctx context.Context) {
	t := time.NewTicker(checkInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c.judgeDeletions(time.Now())
		c.judgeAssignments(time.Now(), false)
		c.followHookFailures(ctx, time.Now())
		for _, v := range c.cw.judge(time.Now(), c.opts.Recent) {
			c.Report(v.Invariant, v.Object, "%s", v.Detail)
		}
		for _, v := range c.bw.judge(time.Now()) {
			c.Report(v.Invariant, v.Object, "%s", v.Detail)
		}
		if err := c.judgeRefusals(ctx, time.Now(), false); err != nil && ctx.Err() == nil {
			c.history.Record(KindNote, "checker: %v", err)
		}
		if err := c.checkStarvation(ctx, time.Now()); err != nil && ctx.Err() == nil {
			c.history.Record(KindNote, "checker: %v", err)
		}
		if err := c.checkCeilings(ctx, time.Now()); err != nil && ctx.Err() == nil {
			c.history.Record(KindNote, "checker: %v", err)
		}
		if err := c.checkFailures(ctx, time.Now()); err != nil && ctx.Err() == nil {
			c.history.Record(KindNote, "checker: %v", err)
		}
		if err := c.tickRolls(ctx, time.Now()); err != nil && ctx.Err() == nil {
			c.history.Record(KindNote, "checker: %v", err)
		}
	}
}

// judgeDeletions decides, for deletions seen long enough ago, whether the Exporter had been
// retired (annotation) or had exited (its Pods last seen completed, not running again).
func (c *Checker) judgeDeletions(now time.Time) {
	c.mu.Lock()
	due, rest := takeDue(c.pending, func(d pendingDeletion) bool { return now.Sub(d.at) >= deletionJudgeDelay })
	c.pending = rest
	sightings := map[types.UID]podSighting{}
	for _, d := range due {
		sightings[d.uid] = c.podSeen[d.uid]
		delete(c.podSeen, d.uid)
	}
	c.deletions += len(due)
	c.mu.Unlock()
	for _, d := range due {
		s := sightings[d.uid]
		exited := !s.terminal.IsZero() && !s.terminal.Before(s.active)
		if !d.retiring && !exited {
			c.Report(InvDeletedUnretired, d.name, "%s was deleted although it was neither retiring, quarantined nor exited (pods last active %s, last completed %s)",
				d.name, fmtTime(s.active), fmtTime(s.terminal))
		}
	}
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Format("15:04:05.000")
}

// checkCeilings evaluates the ceiling invariants of every set from the checker's cache.
func (c *Checker) checkCeilings(ctx context.Context, now time.Time) error {
	var sets vtv1alpha1.ExporterSetList
	if err := c.cache.List(ctx, &sets, client.InNamespace(c.ns)); err != nil {
		return err
	}
	var exporters jumpstarterv1alpha1.ExporterList
	if err := c.cache.List(ctx, &exporters, client.InNamespace(c.ns)); err != nil {
		return err
	}
	var pods corev1.PodList
	if err := c.cache.List(ctx, &pods, client.InNamespace(c.ns)); err != nil {
		return err
	}
	byOwner := podsByController(pods.Items)
	sort.Slice(sets.Items, func(i, j int) bool { return sets.Items[i].Name < sets.Items[j].Name })
	type found struct{ inv, object, detail string }
	var broken []found
	c.mu.Lock()
	c.evaluated++
	for i := range sets.Items {
		set := &sets.Items[i]
		t := c.trackers[set.Name]
		if t == nil {
			t = newCeilingTracker()
			c.trackers[set.Name] = t
		}
		var views []instanceView
		for _, e := range ownedBy(exporters.Items, set.UID) {
			views = append(views, viewOf(e, byOwner[e.UID]))
		}
		if inv, detail := t.check(now, set, views, c.isExcused(set.Name, now), c.opts); inv != "" {
			broken = append(broken, found{inv, set.Name, detail})
		}
	}
	c.mu.Unlock()
	for _, b := range broken {
		c.Report(b.inv, b.object, "%s", b.detail)
	}
	return nil
}
