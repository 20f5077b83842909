package exporterset

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// act carries out the plan: remove, retire, restart, create, then configure and start the
// live instances. Creates never take the set over maxReplicas: plan.Create fits beside
// everything that exists, and plan.CreateAfterRemove more follow only as removals are
// confirmed gone. It goes on after a failed step where the steps are independent, and
// returns every error, so one bad instance does not stall the pool. seq is the next instance
// sequence number.
func (r *Reconciler) act(ctx context.Context, p *pass, obs *observation, plan *Plan, seq int64) (actResult, error) {
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
		errs = append(errs, r.retire(ctx, p, in))
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
			errs = append(errs, r.retire(ctx, p, in))
		}
	}
	for _, in := range plan.RestartPods {
		errs = append(errs, r.restartPods(ctx, p, in))
	}
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

	start := map[string]bool{}
	for _, in := range plan.StartPods {
		start[in.Name()] = true
	}
	var live []*Instance
	for _, in := range obs.Instances {
		if done[in.Name()] || in.Deleting() || in.Retiring() || in.foreign() {
			continue // a foreign instance (adopt.go) is left as it is until retired
		}
		live = append(live, in)
	}
	res.configured, res.caProblem, err = r.configureAll(ctx, p, extReq, live, start)
	errs = append(errs, err)
	if extReq != nil && err == nil {
		errs = append(errs, r.sweepExternal(ctx, p, extReq, obs))
	}
	if len(res.credMissing()) > 0 || res.caProblem != "" {
		p.requeueIn(r.retryInterval) // neither ConfigMaps nor foreign Secrets are watched
	}
	return res, errors.Join(errs...)
}

// configureAll configures the live instances concurrently, at most createParallelism at
// once: an instance new to the pool costs a few requests (token, config Secret, Pod), and
// one instance after another a scale-up of N took N times their round trips. Each returns
// its own result, in instance order, so the conditions come out exactly as one after
// another. They are taken up in finishOrder, those closest to serving first, and those with
// writes to do hold new Exporter creates back meanwhile (finishfirst.go). The CA bundle is
// read once, first, not by every instance at once.
func (r *Reconciler) configureAll(ctx context.Context, p *pass, extReq *provisioner.Request, live []*Instance, start map[string]bool) ([]configureResult, string, error) {
	var ca []byte
	var caProblem string
	var caErr error
	for _, in := range live {
		if in.Credentialed() {
			ca, caProblem, caErr = r.caBundle(ctx, p) // without it, no config Secret is written
			break
		}
	}
	results := make([]configureResult, len(live))
	errs := make([]error, len(live), len(live)+1)
	sem := make(chan struct{}, r.createParallelism)
	var wg sync.WaitGroup
	for _, i := range finishOrder(live, start) {
		in := live[i]
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if in.Credentialed() {
				defer r.finishFirst.finished(in.Exporter.Namespace + "/" + in.Name())
			}
			unlock := r.instanceLocks.lock(in.Exporter.UID) // the fast path may be at it
			defer unlock()
			if hasWorkLeft(in, start[in.Name()]) {
				defer r.finishFirst.finish()()
			}
			if extReq != nil { // its target first; its Pod once the target is ready
				invalid, err := r.ensureExternal(ctx, p, extReq, in)
				if invalid != nil || err != nil {
					results[i], errs[i] = configureResult{podErr: invalid}, err
					return
				}
			}
			results[i], errs[i] = r.configure(ctx, p, ca, in, start[in.Name()] && externalReady(in))
		}()
	}
	wg.Wait()
	return results, caProblem, errors.Join(append(errs, caErr)...)
}

// removeAll removes instances concurrently, at most createParallelism at once, and counts
// those confirmed gone. Each removal is a re-read, a Lease list and a delete; one after
// another, a pass recycling the nine instances a lease storm had used took over two seconds
// before it created a single replacement.
func (r *Reconciler) removeAll(ctx context.Context, p *pass, ins []*Instance) (gone int32, err error) {
	errs := make([]error, len(ins))
	var n atomic.Int32
	sem := make(chan struct{}, r.createParallelism)
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

// createInstances creates n Exporters in slow-start batches (1, 2, 4, ...), as the
// ReplicaSet controller does: a create that fails for all (quota, admission) costs one call,
// not n. Creates within a batch run concurrently, as many at once as the finish-first gate
// allows (finishfirst.go): few while an instance already begun is being finished.
func (r *Reconciler) createInstances(ctx context.Context, p *pass, obs *observation, n int32, seq int64) (int64, error) {
	if n <= 0 {
		return seq, nil
	}
	// The fast path needs the CA bundle the moment the first credential appears: read it
	// beside the first creates, not on that instance's chain.
	prefetched := make(chan struct{})
	go func() { defer close(prefetched); _, _, _ = r.caBundle(ctx, p) }()
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
	remaining := int(n)
	for batch := min(1, remaining); batch > 0; batch = min(2*batch, remaining) {
		names := make([]string, batch)
		for i := range names {
			for {
				names[i] = instanceName(p.set.Name, string(p.set.UID), seq)
				seq++
				if !taken[names[i]] {
					break
				}
			}
		}
		created, err := r.createBatch(ctx, p, names)
		remaining -= batch
		if r.useExpectations {
			r.expectations.expectCreated(keyOf(p.set), p.now, created...)
		}
		r.metrics.countCreated(p.set.Namespace, p.set.Name, len(created))
		if err != nil {
			r.warning(p.set, nil, EventCreateFailed, "Create", "creating instances: %v", err)
			return seq, err
		}
	}
	return seq, nil
}

func (r *Reconciler) createBatch(ctx context.Context, p *pass, names []string) (created []string, err error) {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	// Windowed where the fast path takes the instances up: it is what reports them back.
	_, windowed := r.memory.fast.forSet(keyOf(p.set))
	windowed = windowed && r.fastPath
	for _, name := range names {
		// A slot from the finish-first gate (finishfirst.go).
		release, err := r.finishFirst.create(ctx, r.createParallelism, windowed, time.Now)
		if err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
			break
		}
		wg.Add(1)
		go func() {
			e := r.newExporter(p, name)
			err := r.client.Create(ctx, e)
			if err == nil {
				release(p.set.Namespace + "/" + name)
			} else {
				release("")
			}
			defer wg.Done()
			mu.Lock()
			defer mu.Unlock()
			if apierrors.IsAlreadyExists(err) {
				// An earlier reconcile on a staler cache made it: it is ours, not a new one.
				// A pass a second later looks again, in case no event follows (an Exporter
				// of that name that is not the set's: its expectation lapses in time).
				p.requeueIn(time.Second)
				err = nil
			} else if err == nil {
				p.events.add(EventCreated, name, e)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", name, err))
				return
			}
			created = append(created, name)
		}()
	}
	wg.Wait()
	return created, errors.Join(errs...)
}

func (r *Reconciler) newExporter(p *pass, name string) *jumpstarterv1alpha1.Exporter {
	set := p.set
	var annotations map[string]string
	if a := set.Spec.Template.Metadata.Annotations; len(a) > 0 {
		annotations = make(map[string]string, len(a))
		for k, v := range a {
			annotations[k] = v
		}
	}
	return &jumpstarterv1alpha1.Exporter{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       set.Namespace,
			Labels:          instanceLabels(set, p.hash),
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(set, vtv1alpha1.GroupVersion.WithKind("ExporterSet"))},
		},
		Spec: jumpstarterv1alpha1.ExporterSpec{Enabled: ptr.To(true)},
	}
}
