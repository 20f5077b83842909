package soak

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/exporterset/exporterset/internal/testing/fakeprov"
	"github.com/exporterset/exporterset/internal/testing/jumpsim"
	"github.com/exporterset/exporterset/internal/testing/testenv"
)

// Config is one soak run.
type Config struct {
	// REST reaches the API server (with the project's CRDs installed).
	REST *rest.Config
	// Namespace is an existing, empty namespace used by this run only.
	Namespace string
	// Seed drives the walk (and the fault injection's own source).
	Seed int64
	// Duration is how long the walk runs.
	Duration time.Duration
	// Settle bounds the wait for the final invariants after the walk (default 60s).
	Settle time.Duration
	// PluginDir holds exporterset-provisioner-* binaries serving PluginProvisioner; empty
	// leaves the plugin set (and the kill-plugin action) out.
	PluginDir string
	// Ceiling are the tolerances of the ceiling invariants (default DefaultCeilingOptions).
	Ceiling CeilingOptions
	// Logf, if set, receives progress lines.
	Logf func(format string, args ...any)
	// InjectViolationAfter, when positive, reports a fake violation that long into the walk:
	// the self-test's proof that a violation stops the walk and fails the run.
	InjectViolationAfter time.Duration
}

// Result is what a run did and found.
type Result struct {
	Seed          int64
	Walked        time.Duration
	Steps         int
	Actions       map[string]int
	Events        int // history entries: actions, fault changes, notes, violations
	SimEvents     int // what the Jumpstarter simulator did (credentials, leases, Pods, GC)
	Faults        [3]int64
	Restarts      int
	Deletions     int // Exporter deletions the checker judged
	Evaluations   int // ceiling evaluations
	Violations    []Violation
	FinalProblems []string
	ConvergedIn   time.Duration
	HistoryTail   string
	// FailureEvents are the simulator failures the walk injected, by kind (FailImagePull...).
	FailureEvents map[string]int
	// Reported are the Degraded reasons the controller newly reported, by reason.
	Reported map[string]int
	// AvailableJudged counts the statuses saying Available=True that the checker judged;
	// WFFCLeased those of them a stricter reading of the WaitForFirstConsumer rule refuses.
	AvailableJudged, WFFCLeased int
	// ChurnWorst is the failing window closest to its churn bound: instances created, bound.
	ChurnWorst [2]int64
	// RollsStarted counts the edits of a spec hash the walk made (RollsBy: by the action
	// that made them: start-roll, a template or a class parameters edit), RollsDone the
	// rolls that ended with no outdated instance left (or were superseded by a newer one).
	RollsStarted, RollsDone int
	RollsBy                 map[string]int
	// RollJudged counts the roll retirements the roll floor judged; RollSkipped the
	// retirements of outdated instances it did not judge, by why.
	RollJudged  int
	RollSkipped map[string]int
	// HookFailures counts the failed lease hooks the exporters reported; Quarantines the
	// instances the sets quarantined, Reenabled those a person (the walk) enabled again;
	// AssignJudged the lease assignments the quarantine invariant judged, AssignRaced those
	// written just after a quarantine, within the scheduler's cache race (quarantinewatch.go).
	HookFailures, Quarantines, Reenabled, AssignJudged, AssignRaced int
	// HookLeft and HookStayed count the failed hooks whose instance was, or was not, out of
	// service 2 s later (counted, not judged: see Checker.followHookFailures).
	HookLeft, HookStayed int
	// Refused counts the Leases the refusal invariant judged (ended Unsatisfiable NoAccess or
	// AllDisabled), RefusedNoPool those for no set, RefusedExcused those whose set had no
	// room or had just been changed by the soak (refusewatch.go).
	Refused, RefusedNoPool, RefusedExcused int
	// Budget is what the soak's CapacityBudget did (exhaustions, reclaims), from its status
	// and the Exporters' watch (budgetwatch.go).
	Budget BudgetStats
}

// Failed reports whether an invariant broke during or after the walk.
func (r *Result) Failed() bool { return len(r.Violations) > 0 || len(r.FinalProblems) > 0 }

// Summary is the one-paragraph account of a run, quoted by the test's log.
func (r *Result) Summary() string {
	var acts []string
	for name, n := range r.Actions {
		acts = append(acts, fmt.Sprintf("%s=%d", name, n))
	}
	sort.Strings(acts)
	verdict := "all invariants held"
	switch {
	case len(r.Violations) > 0:
		verdict = fmt.Sprintf("%d VIOLATIONS, first: %s", len(r.Violations), r.Violations[0])
	case len(r.FinalProblems) > 0:
		verdict = fmt.Sprintf("NOT CONVERGED: %s", strings.Join(r.FinalProblems, "; "))
	default:
		verdict += fmt.Sprintf(", converged %s after the walk", r.ConvergedIn.Round(100*time.Millisecond))
	}
	return fmt.Sprintf("seed %d: %s walk, %d steps (%s), %d history events, %d simulator events, injected API errors %d conflicts / %d throttled / %d internal, %d controller restarts, %d exporter deletions judged, %d ceiling evaluations, %d refused leases judged (%d for no pool, %d excused), %s, %d Available=True statuses judged (%d WaitForFirstConsumer ones with fewer unleased instances than minAvailableReplicas), churn of failing sets at most %d of %d allowed in a window, %s, %s, %s: %s",
		r.Seed, r.Walked.Round(time.Second), r.Steps, strings.Join(acts, " "), r.Events, r.SimEvents,
		r.Faults[0], r.Faults[1], r.Faults[2], r.Restarts, r.Deletions, r.Evaluations, r.Refused, r.RefusedNoPool, r.RefusedExcused, r.FailureSummary(), r.AvailableJudged, r.WFFCLeased, r.ChurnWorst[0], r.ChurnWorst[1], r.RollSummary(), r.QuarantineSummary(), r.BudgetSummary(), verdict)
}

// BudgetSummary says what the CapacityBudget did.
func (r *Result) BudgetSummary() string {
	b := r.Budget
	return fmt.Sprintf("budget exhausted %d times (%d with Leases waiting), %d reclaim asks, %d governed instances retired under one, %d starvation evaluations with the budget full and an idle spare elsewhere (of %d with a Lease waiting at a full budget), %d roll steps below the availability floor at the budget's allowed",
		b.Exhausted, b.DemandExhausted, b.ReclaimAsks, b.ReclaimRetired, b.StarveJudged, b.StarveNear, b.RollDipsAtAllowed)
}

// QuarantineSummary says how many lease hooks failed, how many instances were quarantined
// and how many lease assignments the quarantine invariant judged.
func (r *Result) QuarantineSummary() string {
	return fmt.Sprintf("%d failed lease hooks reported (%d of their instances out of service 2s later, %d still in service), %d quarantines (%d times a quarantined instance was enabled again by hand), %d lease assignments judged against the quarantine (%d within the scheduler's race grace)",
		r.HookFailures, r.HookLeft, r.HookStayed, r.Quarantines, r.Reenabled, r.AssignJudged, r.AssignRaced)
}

// RollSummary says how many rolls the walk started and how many roll retirements the roll
// floor judged.
func (r *Result) RollSummary() string {
	return fmt.Sprintf("%d rolls started (%s), %d done, %d roll retirements judged against the availability floor (outdated retirements not judged: %s)",
		r.RollsStarted, countList(r.RollsBy), r.RollsDone, r.RollJudged, countList(r.RollSkipped))
}

// FailureSummary says how many failure events the run injected, by kind, and which failure
// reasons the controller reported.
func (r *Result) FailureSummary() string {
	total := 0
	for _, n := range r.FailureEvents {
		total += n
	}
	return fmt.Sprintf("%d failure events injected (%s), Degraded reasons reported (%s)", total, countList(r.FailureEvents), countList(r.Reported))
}

func countList(m map[string]int) string {
	var out []string
	for k, n := range m {
		out = append(out, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(out)
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ")
}

// Report is the failure report: the seed to replay, the violations, what is not converged
// and the tail of the history.
func (r *Result) Report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "soak failed with seed %d (replay: SOAK_SEED=%d make soak DURATION=%s)\n", r.Seed, r.Seed, r.Walked.Round(time.Second))
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "violation: %s\n", v)
	}
	for _, p := range r.FinalProblems {
		fmt.Fprintf(&b, "not converged: %s\n", p)
	}
	fmt.Fprintf(&b, "history (last entries):\n%s", r.HistoryTail)
	return b.String()
}

// historyTail is how many history entries a failure prints.
const historyTail = 300

// Run runs one soak: the simulator, the controller and the checker in cfg.Namespace, the walk
// for cfg.Duration, then the wait for the final invariants. Its error is about the run
// itself (the API server unreachable, a manager that cannot start); broken invariants are in
// the Result.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Settle <= 0 {
		cfg.Settle = time.Minute
	}
	if cfg.Ceiling == (CeilingOptions{}) {
		cfg.Ceiling = DefaultCeilingOptions()
	}
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res := &Result{Seed: cfg.Seed}
	history := NewHistory(4000)
	scheme := testenv.NewScheme()
	direct, err := client.New(cfg.REST, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	w := &world{ns: cfg.Namespace, c: direct, fake: fakeprov.New(), faults: NewFaults(cfg.Seed + 1), history: history, pools: pools(cfg.PluginDir != "")}

	// Exporters on a lost node go offline after 5s instead of upstream's minute: the node
	// faults last seconds.
	w.sim, err = jumpsim.New(cfg.REST, jumpsim.WithNamespaces(w.ns), jumpsim.WithEventLimit(20000), jumpsim.WithOnlineTimeout(5*time.Second))
	if err != nil {
		return nil, err
	}
	if err := w.sim.Start(ctx); err != nil {
		return nil, err
	}
	defer func() { _ = w.sim.Stop() }()

	registry := w.fake.Registry()
	// A remote target is ready a moment after its creation, as a VM boots.
	w.ext = fakeprov.NewExternal(w.fake)
	w.ext.ReadyAfter = 500 * time.Millisecond
	if err := w.ext.Register(registry); err != nil {
		return nil, err
	}
	if cfg.PluginDir != "" {
		if w.plugins, err = startPlugins(ctx, cfg.PluginDir, registry); err != nil {
			return nil, err
		}
		defer func() { _ = w.plugins.Close() }()
	}
	if err := w.populate(ctx); err != nil {
		return nil, err
	}
	if w.checker, err = NewChecker(cfg.REST, w.ns, history, cfg.Ceiling); err != nil {
		return nil, err
	}
	w.checker.WatchRemote(w.ext.Remotes)
	w.checker.ServeProvisioners(func(name string) bool { _, ok := registry.Get(name); return ok })
	if err := w.checker.Start(ctx); err != nil {
		return nil, err
	}
	w.ctrl = newController(cfg.REST, scheme, w.ns, registry, w.faults)
	w.ctrl.onStart = func() { w.checker.NoteReset("") }
	if err := w.ctrl.start(ctx); err != nil {
		return nil, err
	}
	defer func() { _ = w.ctrl.stop() }()
	w.faults.SetRates(0.03, 0.01)
	history.Record(KindFault, "API errors on 3%% of writes, 1%% of reads")

	if cfg.InjectViolationAfter > 0 {
		go func() {
			select {
			case <-time.After(cfg.InjectViolationAfter):
				w.checker.Report(InvInjected, "", "a violation injected by the self-test")
			case <-ctx.Done():
			}
		}()
	}

	logf("seed %d: walking for %s in namespace %s (%d sets, plugin %v)", cfg.Seed, cfg.Duration, w.ns, len(w.pools), w.plugins != nil)
	walk := newWalk(cfg.Seed, w)
	start := time.Now()
	walk.run(ctx, start.Add(cfg.Duration), w.checker.Failed())
	res.Walked = time.Since(start)

	if len(w.checker.Violations()) == 0 && ctx.Err() == nil {
		logf("seed %d: walk done after %d steps; quiescing and waiting up to %s for convergence", cfg.Seed, walk.steps, cfg.Settle)
		if err := walk.quiesce(ctx); err != nil {
			history.Record(KindNote, "quiesce: %v", err)
		}
		settleStart := time.Now()
		res.FinalProblems = waitFinal(ctx, w.checker, cfg.Settle, w.checker.Failed())
		res.ConvergedIn = time.Since(settleStart)
		if len(res.FinalProblems) > 0 {
			for _, p := range res.FinalProblems {
				history.Record(KindViolation, "%s: %s", InvFinal, p)
			}
		}
	}
	// Every lease assignment seen is judged against the quarantine, the last ones too.
	w.checker.FlushQuarantine()
	// So is every refused lease.
	w.checker.FlushRefusals(ctx)
	res.Violations = w.checker.Violations()
	res.Steps, res.Actions = walk.steps, walk.counts
	res.Events = history.Total()
	res.SimEvents = simEventCount(w.sim)
	res.Faults[0], res.Faults[1], res.Faults[2] = w.faults.Injected()
	res.Restarts = w.ctrl.restarts()
	res.Deletions, res.Evaluations = w.checker.Stats()
	res.FailureEvents, _ = walk.FailureEvents()
	res.Reported, res.AvailableJudged, res.WFFCLeased, res.ChurnWorst[0], res.ChurnWorst[1] = w.checker.FailureStats()
	res.RollsStarted, res.RollsBy, res.RollsDone, res.RollJudged, res.RollSkipped = w.checker.RollStats()
	res.Quarantines, res.Reenabled, res.HookFailures, res.AssignJudged, res.AssignRaced = w.checker.QuarantineStats()
	res.HookLeft, res.HookStayed = w.checker.HookFollowUps()
	res.Budget = w.checker.BudgetStats()
	res.Refused, res.RefusedNoPool, res.RefusedExcused = w.checker.RefuseStats()
	res.HistoryTail = history.Tail(historyTail)
	if res.Failed() {
		res.HistoryTail += simTail(w.sim, res)
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.Canceled) {
		return res, err
	}
	return res, nil
}

// waitFinal polls the final invariants until they hold, the deadline passes or a violation
// is found meanwhile, and returns what was still wrong.
func waitFinal(ctx context.Context, c *Checker, settle time.Duration, failed <-chan struct{}) []string {
	deadline := time.Now().Add(settle)
	var last []string
	for {
		problems, err := c.Final(ctx)
		if err != nil {
			problems = []string{fmt.Sprintf("reading the final state: %v", err)}
		}
		if len(problems) == 0 {
			c.history.Record(KindNote, "final: the invariants hold")
			return nil
		}
		if !slices.Equal(problems, last) {
			// What the pool still lacks, each time it changes: a walk that converges late
			// or not at all shows what it waited for.
			c.history.Record(KindNote, "final: waiting for %s", strings.Join(problems, "; "))
		}
		last = problems
		if time.Now().After(deadline) {
			return last
		}
		select {
		case <-ctx.Done():
			return last
		case <-failed:
			return nil // the violation is the finding
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// simEventCount sums the simulator's per-action counts (kept even when records are dropped).
func simEventCount(sim *jumpsim.Simulator) int {
	n := 0
	for _, a := range []string{
		jumpsim.ActionCredentialIssued, jumpsim.ActionTokenRotated, jumpsim.ActionExporterOnline, jumpsim.ActionExporterOffline,
		jumpsim.ActionLeasePending, jumpsim.ActionLeaseAssigned, jumpsim.ActionLeaseUnsatisfiable, jumpsim.ActionLeaseInvalid,
		jumpsim.ActionLeaseEnded, jumpsim.ActionPodBound, jumpsim.ActionPodWaiting, jumpsim.ActionPodRunning,
		jumpsim.ActionPodSucceeded, jumpsim.ActionPodFailed, jumpsim.ActionPodRestarted, jumpsim.ActionPodFinalized,
		jumpsim.ActionGCDeleted, jumpsim.ActionGCOwnerRefRemoved, jumpsim.ActionGCFinalizerRemoved,
		jumpsim.ActionAnomaly, jumpsim.ActionError,
	} {
		n += sim.Count(a)
	}
	return n
}

// simTail adds, for a failure, what the simulator did to the objects named in violations.
func simTail(sim *jumpsim.Simulator, res *Result) string {
	seen := map[string]bool{}
	var b strings.Builder
	for _, v := range res.Violations {
		if v.Object == "" || seen[v.Object] {
			continue
		}
		seen[v.Object] = true
		for _, e := range sim.Events() {
			if e.Name == v.Object || strings.Contains(e.Detail, v.Object) {
				fmt.Fprintf(&b, "sim: %s\n", e)
			}
		}
	}
	if b.Len() == 0 {
		return ""
	}
	return "simulator events about the objects concerned:\n" + b.String()
}
