package exporterset

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// act carries out the plan: remove, retire, restart, create, then configure and start the
// live instances. It goes on after a failed step where the steps are independent, and
// returns every error, so one bad instance does not stall the pool.
func (r *Reconciler) act(ctx context.Context, p *pass) error {
	var errs []error
	done := map[string]bool{} // instances this pass retires or removes: not configured or started

	for _, in := range p.plan.Remove {
		done[in.Name()] = true
	}
	errs = append(errs, r.removeAll(ctx, p, p.plan.Remove))
	for _, in := range p.plan.Retire {
		done[in.Name()] = true
		errs = append(errs, r.retire(ctx, p, in))
	}
	for _, in := range p.obs.Strays {
		if in.Deleting() || in.Leased() {
			continue
		}
		done[in.Name()] = true
		if in.Retiring() {
			errs = append(errs, r.remove(ctx, p, in))
		} else {
			errs = append(errs, r.retire(ctx, p, in))
		}
	}
	for _, in := range p.plan.RestartPods {
		errs = append(errs, r.restartPods(ctx, p, in))
	}
	errs = append(errs, r.createInstances(ctx, p, p.plan.Create))

	start := map[string]bool{}
	for _, in := range p.plan.StartPods {
		start[in.Name()] = true
	}
	var live []*Instance
	for _, in := range p.obs.Instances {
		if done[in.Name()] || in.Deleting() || in.Retiring() {
			continue
		}
		live = append(live, in)
	}
	errs = append(errs, r.configureAll(ctx, p, live, start))
	if len(p.credMissing) > 0 || p.caProblem != "" {
		p.requeueIn(r.retryInterval) // neither ConfigMaps nor foreign Secrets are watched
	}
	return errors.Join(errs...)
}

// configureAll configures the live instances concurrently, at most createParallelism at
// once: an instance new to the pool costs a few requests (token, config Secret, Pod), and
// one instance after another a scale-up of N took N times their round trips. Each instance
// works on its own copy of the pass, whose problem fields are merged back in instance
// order, so the conditions come out exactly as one after another.
func (r *Reconciler) configureAll(ctx context.Context, p *pass, live []*Instance, start map[string]bool) error {
	for _, in := range live {
		if in.Credentialed() {
			// The CA bundle is read once, here, not by every instance at once. An error is
			// met again, and returned, by each instance below.
			_, _ = r.caBundle(ctx, p)
			break
		}
	}
	passes := make([]pass, len(live))
	errs := make([]error, len(live))
	sem := make(chan struct{}, r.createParallelism)
	var wg sync.WaitGroup
	for i, in := range live {
		passes[i] = *p
		passes[i].credMissing, passes[i].waitingCreds, passes[i].podErr = nil, 0, nil
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			unlock := r.instanceLocks.lock(in.Exporter.UID) // the fast path may be at it
			defer unlock()
			errs[i] = r.configure(ctx, &passes[i], in, start[in.Name()])
		}()
	}
	wg.Wait()
	for i := range passes {
		q := &passes[i]
		p.waitingCreds += q.waitingCreds
		p.credMissing = append(p.credMissing, q.credMissing...)
		if q.podErr != nil {
			p.podErr = q.podErr
		}
		if p.caProblem == "" && q.caProblem != "" {
			p.caProblem = q.caProblem
		}
		if p.ca == nil && q.ca != nil {
			p.ca = q.ca
		}
	}
	return errors.Join(errs...)
}

// removeAll removes instances concurrently, at most createParallelism at once. Each removal
// is a re-read, a Lease list and a delete; one after another, a pass recycling the nine
// instances a lease storm had used took over two seconds before it created a single
// replacement. Each removal works on its own copy of the pass; their requeues are merged.
func (r *Reconciler) removeAll(ctx context.Context, p *pass, ins []*Instance) error {
	passes := make([]pass, len(ins))
	errs := make([]error, len(ins))
	sem := make(chan struct{}, r.createParallelism)
	var wg sync.WaitGroup
	for i, in := range ins {
		passes[i] = *p
		passes[i].requeue = 0
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			errs[i] = r.remove(ctx, &passes[i], in)
		}()
	}
	wg.Wait()
	for i := range passes {
		p.requeueIn(passes[i].requeue)
	}
	return errors.Join(errs...)
}

// createInstances creates n Exporters in slow-start batches (1, 2, 4, ...), as the
// ReplicaSet controller does: a create that fails for all (quota, admission) costs one call,
// not n. Creates within a batch run concurrently.
func (r *Reconciler) createInstances(ctx context.Context, p *pass, n int32) error {
	if n <= 0 {
		return nil
	}
	// A pass whose status write failed after it created instances leaves the sequence
	// behind them: the names it would compute again belong to instances already counted.
	taken := map[string]bool{}
	for _, in := range p.obs.Instances {
		taken[in.Name()] = true
	}
	for _, in := range p.obs.Strays {
		taken[in.Name()] = true
	}
	remaining := int(n)
	for batch := min(1, remaining); batch > 0; batch = min(2*batch, remaining) {
		names := make([]string, batch)
		for i := range names {
			for {
				names[i] = InstanceName(p.set.Name, string(p.set.UID), p.seq)
				p.seq++
				if !taken[names[i]] {
					break
				}
			}
		}
		created, err := r.createBatch(ctx, p, names)
		p.created += len(created)
		remaining -= batch
		if r.useExpectations {
			r.expectations.expectCreated(keyOf(p.set), p.now, created...)
		}
		r.metrics.countCreated(p.set.Namespace, p.set.Name, len(created))
		if err != nil {
			p.createErr = err
			r.recorder.Eventf(p.set, nil, "Warning", EventCreateFailed, "Create", "creating instances: %v", err)
			return err
		}
	}
	return nil
}

func (r *Reconciler) createBatch(ctx context.Context, p *pass, names []string) (created []string, err error) {
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	sem := make(chan struct{}, r.createParallelism)
	for _, name := range names {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			e := r.newExporter(p, name)
			err := r.client.Create(ctx, e)
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
