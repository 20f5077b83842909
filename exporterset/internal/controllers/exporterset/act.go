package exporterset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/contract"
	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
	"github.com/exporterset/exporterset/exporterset/internal/ledger"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/provisioner"
)

// act carries out the plan: remove, retire, publish the decisions for the live instances and
// poke those the decisions changed for, then create; the instance reconciler
// (internal/controllers/instance) configures, starts and restarts them. Creates never take the set over
// maxReplicas: plan.Create fits beside everything that exists, and plan.CreateAfterRemove
// more follow only as removals are confirmed gone. holdUntil is when the plan lets
// Pods start again (a failure backoff, an unreachable remote end); problems and ext are
// what diagnosis and the external observation found. It goes on after a failed
// step where the steps are independent, and returns every error, so one bad instance does not
// stall the pool. seq is the next instance sequence number.
func (r *Reconciler) act(ctx context.Context, p *pass, obs *observation, plan *pool.Plan, seq int64, holdUntil time.Time, problems pool.Problems, ext externalStates) (actResult, error) {
	var errs []error
	res := actResult{seq: seq}
	done := map[string]bool{} // instances this pass retires or removes: not configured or started

	// External provisioners: the request with the class's credentials (observeExternal has
	// reported a problem reading them), and the finalizers of instances being deleted.
	var extReq *provisioner.Request
	if externalOf(p.prov) != nil {
		var problem string
		var err error
		if extReq, problem, err = r.externalRequest(ctx, p); err == nil && problem == "" {
			errs = append(errs, r.finalizeDeleting(ctx, p, extReq, obs))
		}
	}

	for _, in := range plan.Remove {
		done[in.Name()] = true
	}
	// Removals start first, concurrently among themselves and with the creates that fit
	// beside them (plan.Create counts the instances being removed against maxReplicas).
	// A replacement at the ceiling is created in this pass once its predecessor's removal
	// is confirmed gone, one per removal: it waits for the delete's round trips (a re-read,
	// a Lease list, a delete), never for another pass.
	type removal struct {
		gone int32
		err  error
	}
	removed := make(chan removal, 1)
	go func() {
		gone, err := r.removeAll(ctx, p, plan.Remove)
		removed <- removal{gone, err}
	}()
	for _, in := range plan.Retire {
		done[in.Name()] = true
		errs = append(errs, r.retire(ctx, p, in, plan.RetirementReason(in)))
	}
	// The last enabled Exporter at the ceiling is kept and renewed in place (leasewait.go).
	held, renewErrs := r.renewAll(ctx, p, plan)
	errs = append(errs, renewErrs...)
	if n := len(plan.Reclaimed); n > 0 {
		for _, in := range plan.Reclaimed {
			p.events.Add(eventlog.BudgetReclaim, in.Name()+" (CapacityBudget "+p.gov.strictest+")", in.Exporter)
		}
		r.Metrics.CountReclaims(p.set.Namespace, p.gov.strictest, p.set.Name, n)
	}
	for _, in := range obs.Strays {
		if in.Deleting() || in.Leased() {
			continue
		}
		done[in.Name()] = true
		if in.Retiring() {
			_, err := r.remove(ctx, p, in)
			errs = append(errs, err)
		} else {
			errs = append(errs, r.retire(ctx, p, in, pool.RetiredRolled)) // the selector no longer selects it
		}
	}
	// The decisions for the live instances are published before any Exporter is created:
	// a new instance's credential, which follows its create, finds them (intents.go).
	live := liveInstances(obs, done)
	var ca []byte
	var caErr error
	for _, in := range live {
		if in.Credentialed() {
			ca, res.caProblem, caErr = r.CA.Get(ctx, p.set, p.class) // without it, no config Secret is written
			break
		}
	}
	intents := intentsOf(p, plan, holdUntil, ca, problems, ext, held)
	if extReq != nil {
		withTargets(intents, extReq, live, ext, plan.Standby > 0)
	}
	r.Board.Publish(keyOf(p.set), intents)
	r.pokeChanged(ctx, p, intents, live)
	var err error
	res.seq, err = r.createInstances(ctx, p, obs, plan.Create, seq)
	rm := <-removed
	errs = append(errs, rm.err)
	if after := plan.CreatesAfterRemoval(rm.gone); after > 0 && err == nil {
		res.seq, err = r.createInstances(ctx, p, obs, after, res.seq)
	}
	if err != nil {
		res.createErr = err
		errs = append(errs, err)
	}

	errs = append(errs, r.recordUses(ctx, p, live, obs.Leases)) // after the creates: they are what a pool waits for

	errs = append(errs, caErr)
	if extReq != nil {
		errs = append(errs, r.sweepExternal(ctx, p, extReq, obs))
	}
	res.configured = r.configured(p, live)
	if len(res.credMissing()) > 0 || res.caProblem != "" {
		p.requeueIn(r.RetryInterval) // neither ConfigMaps nor foreign Secrets are watched
	}
	return res, errors.Join(errs...)
}

// liveInstances are the instances a pass builds on: not removed or retired by it, not being
// deleted, retiring or quarantined (kept as it is for inspection), not foreign (adopt.go:
// left as it is until retired).
func liveInstances(obs *observation, done map[string]bool) []*pool.Instance {
	var live []*pool.Instance
	for _, in := range obs.Instances {
		if !done[in.Name()] && !objects.OutOfPool(in) && !in.Foreign() {
			live = append(live, in)
		}
	}
	return live
}

// configured is what building each live instance last met, in instance order: waiting for
// its credential, or what the instance controller reported (an external instance's refused
// target first).
func (r *Reconciler) configured(p *pass, live []*pool.Instance) []contract.Result {
	out := make([]contract.Result, len(live))
	for i, in := range live {
		res, _ := r.Board.Result(keyOf(p.set), in.Exporter.UID)
		switch {
		case res.TargetErr != nil:
			out[i] = contract.Result{PodErr: res.TargetErr}
		case !in.Credentialed():
			out[i] = contract.Result{WaitingCred: true, TargetWait: res.TargetWait}
		default:
			out[i] = res
		}
	}
	return out
}

// removeAll removes instances concurrently, at most createParallelism at once, and counts
// those confirmed gone. Each removal is a re-read, a Lease list and a delete; one after
// another, a pass recycling the nine instances a lease storm had used took over two seconds
// before it created a single replacement.
func (r *Reconciler) removeAll(ctx context.Context, p *pass, ins []*pool.Instance) (gone int32, err error) {
	errs := make([]error, len(ins))
	var n atomic.Int32
	sem := make(chan struct{}, r.CreateParallelism)
	var wg sync.WaitGroup
	for i, in := range ins {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			var g bool
			g, errs[i] = r.remove(ctx, p, in)
			if g {
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	return n.Load(), errors.Join(errs...)
}

// createInstances creates n Exporters (n is paced already, pacing.go), at most
// createParallelism at once.
func (r *Reconciler) createInstances(ctx context.Context, p *pass, obs *observation, n int32, seq int64) (int64, error) {
	if n <= 0 {
		return seq, nil
	}
	// The instance reconciler needs the CA bundle the moment the first credential appears:
	// read it beside the first creates, not on that instance's chain.
	prefetched := make(chan struct{})
	go func() { defer close(prefetched); _, _, _ = r.CA.Get(ctx, p.set, p.class) }()
	defer func() { <-prefetched }()
	// A pass whose status write failed after it created instances leaves the sequence
	// behind them: the names it would compute again belong to instances already counted.
	taken := map[string]bool{}
	for _, in := range obs.Instances {
		taken[in.Name()] = true
	}
	for _, in := range obs.Strays {
		taken[in.Name()] = true
	}
	var per corev1.ResourceList
	if p.gov.governed() {
		var err error
		if per, err = r.instanceRequests(ctx, p); err != nil {
			return seq, err
		}
	}
	remaining := int(n)
	for batch := min(remaining, max(1, r.CreateParallelism)); batch > 0; batch = min(remaining, max(1, r.CreateParallelism)) {
		names := make([]string, batch)
		for i := range names {
			for {
				names[i] = objects.InstanceName(p.set.Name, string(p.set.UID), seq)
				seq++
				if !taken[names[i]] {
					break
				}
			}
		}
		bctx, cancel := ctx, context.CancelFunc(func() {})
		if p.gov.governed() {
			// The budgets must hold a place for each before it is created (internal/ledger).
			// Timed on the wall clock alone (a context's timeout is a wall-clock timer): the
			// reservation's recorded time is the injected clock's, rounded down to the second,
			// so a second is taken off.
			reserving := time.Now()
			got, err := r.reserve(ctx, p, names, per)
			if err != nil {
				r.warning(p.set, nil, eventlog.CreateFailed, "Create", "reserving capacity: %v", err)
				return seq, err
			}
			if got < len(names) {
				names, remaining = names[:got], got // the budget is full: the rest waits for a place
			}
			if got == 0 {
				break
			}
			// Not after half the grace: the reservation may be dropped for its age then.
			bctx, cancel = context.WithTimeout(ctx, ledger.ReservationGrace/2-time.Second-time.Since(reserving))
		}
		created, err := r.createBatch(bctx, p, names, per)
		cancel()
		remaining -= len(names)
		if r.UseExpectations {
			r.expectations.expectCreated(keyOf(p.set), p.now, created...)
		}
		r.Metrics.CountCreated(p.set.Namespace, p.set.Name, len(created))
		if p.set.Status.InstanceSequence == 0 && len(created) > 0 {
			traceFirst(ctx, stepExporterCreate, "exporters", created)
		}
		if err != nil {
			r.warning(p.set, nil, eventlog.CreateFailed, "Create", "creating instances: %v", err)
			return seq, err
		}
	}
	return seq, nil
}

// createBatch creates the Exporters named, concurrently.
func (r *Reconciler) createBatch(ctx context.Context, p *pass, names []string, requests corev1.ResourceList) (created []string, err error) {
	errs := make([]error, len(names))
	ok := make([]bool, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := r.newExporter(p, name, requests)
			err := r.client.Create(ctx, e)
			switch {
			case apierrors.IsAlreadyExists(err):
				// An earlier reconcile on a staler cache made it: it is ours, not a new one.
				// A pass a second later looks again, in case no event follows (an Exporter
				// of that name that is not the set's: its expectation lapses in time).
				p.requeueIn(time.Second)
				ok[i] = true
			case err != nil:
				errs[i] = fmt.Errorf("%s: %w", name, err)
			default:
				p.events.Add(eventlog.Created, name, e)
				ok[i] = true
			}
		}()
	}
	wg.Wait()
	for i, name := range names {
		if ok[i] {
			created = append(created, name)
		}
	}
	return created, errors.Join(errs...)
}

func (r *Reconciler) newExporter(p *pass, name string, requests corev1.ResourceList) *jumpstarterv1alpha1.Exporter {
	set := p.set
	var annotations map[string]string
	if a := set.Spec.Template.Metadata.Annotations; len(a) > 0 || requests != nil {
		annotations = make(map[string]string, len(a)+1)
		for k, v := range a {
			annotations[k] = v
		}
		if b, err := json.Marshal(requests); err == nil && requests != nil {
			annotations[AnnotationRequests] = string(b)
		}
	}
	return &jumpstarterv1alpha1.Exporter{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       set.Namespace,
			Labels:          objects.InstanceLabels(set, p.hash),
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, vtv1alpha1.GroupVersion.WithKind("ExporterSet"))},
		},
		Spec: jumpstarterv1alpha1.ExporterSpec{Enabled: ptr.To(true)},
	}
}
