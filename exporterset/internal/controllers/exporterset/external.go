package exporterset

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/cabundle"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/provisioner"
)

// External instances (provisioner.ExternalProvisioner): a target outside the Pod, such as a
// VirtualMachine on a remote cluster. The reconciler owns their lifecycle as it owns Pods':
//
//   - a pass that observes no target for a live instance asks the instance controller for
//     one (contract.Intent.CreateTarget), which builds it: the finalizer and the class's
//     name first, so that an Exporter deleted by anyone (the garbage collector after its
//     set, a person) still has its remote resources cleaned up; then CreateExternal and
//     its annotations (internal/controllers/instance/target.go). The instance's Pod is
//     started only once ObserveExternal says Ready, so its exporter registers (and gets
//     leases) only with a target to serve;
//   - ObserveExternal every pass: Failed is a Problem like a crashing Pod, Gone is created
//     again, and a remote end that cannot be reached holds the set (no creates, nothing
//     deleted) and is reported;
//   - Cleanup (honouring reclaimPolicy) before the finalizer goes;
//   - InventoryExternal, at most every inventory interval, sweeps resources whose instance
//     no longer exists (created just before a crash and never recorded).

// What is recorded on an external instance's Exporter (objects.FinalizerExternal and the
// rest): the instance controller writes it as it creates the target.
const (
	FinalizerExternal          = objects.FinalizerExternal
	AnnotationClass            = objects.AnnotationClass
	AnnotationExternalRecorded = objects.AnnotationExternalRecorded
)

// DefaultInventoryInterval is how often, at most, a set's external inventory is swept
// (WithTuning).
const DefaultInventoryInterval = time.Minute

// externalOf returns p's external capability, nil when it has none.
func externalOf(p provisioner.Provisioner) provisioner.ExternalProvisioner {
	ext, _ := p.(provisioner.ExternalProvisioner)
	return ext
}

// externalResult is what the external step saw: set only for external provisioners.
type externalResult struct {
	// unreachable is the error of an ObserveExternal that could not tell (the remote end
	// cannot be reached); the set is held while it lasts.
	unreachable error
	// credentials is why the class's credentials could not be read ("" when they could).
	credentials string
	// states are the instances' external states, by Exporter UID, as ObserveExternal
	// reported them; none for an instance while the remote end cannot be reached.
	states externalStates
}

// externalStates are instances' external states, by Exporter UID.
type externalStates map[types.UID]*provisioner.ExternalState

// of is in's state, nil when unknown (or in lives in its Pod).
func (s externalStates) of(in *pool.Instance) *provisioner.ExternalState { return s[in.Exporter.UID] }

// externalRequest is p.req with the class's credentials, for the ExternalProvisioner
// methods and Cleanup. The credentials Secret is read uncached (Secrets not labelled for a
// set are not in the cache) and remembered per set for cabundle.TTL.
func (r *Reconciler) externalRequest(ctx context.Context, p *pass) (*provisioner.Request, string, error) {
	creds, problem, err := r.credentials(ctx, p.set.Namespace, keyOf(p.set), p.class)
	if err != nil || problem != "" {
		return nil, problem, err
	}
	req := *p.req
	req.Credentials = creds
	return &req, "", nil
}

// credentialsEntry is a class's credentials Secret data, as read at.
type credentialsEntry struct {
	secret string
	data   map[string][]byte
	at     time.Time
}

func (r *Reconciler) credentials(ctx context.Context, namespace, set string, class *vtv1alpha1.VirtualTargetClass) (map[string][]byte, string, error) {
	ref := class.Spec.CredentialsSecretRef
	if ref == nil || ref.Name == "" {
		return nil, "", nil // the provisioner's Validate says whether it needs them
	}
	if e, ok := r.memory.credentials.ForSet(set); ok && e.secret == ref.Name && r.Clock.Since(e.at) < cabundle.TTL {
		return e.data, "", nil
	}
	var s corev1.Secret
	if err := r.apiReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, &s); err != nil {
		if apierrors.IsNotFound(err) {
			r.memory.credentials.DropSet(set)
			return nil, fmt.Sprintf("credentials Secret %s/%s of class %s not found", namespace, ref.Name, class.Name), nil
		}
		return nil, "", fmt.Errorf("reading credentials Secret %s: %w", ref.Name, err)
	}
	r.memory.credentials.PutSet(set, credentialsEntry{secret: ref.Name, data: s.Data, at: r.Clock.Now()})
	return s.Data, "", nil
}

// observeExternal returns each live instance's external state, concurrently (each is a
// remote call). Instances not created remotely yet are Gone.
func (r *Reconciler) observeExternal(ctx context.Context, p *pass, obs *observation) (externalResult, error) {
	var res externalResult
	ext := externalOf(p.prov)
	if ext == nil || p.req == nil {
		return res, nil
	}
	req, problem, err := r.externalRequest(ctx, p)
	if err != nil || problem != "" {
		res.credentials = problem
		return res, err
	}
	res.states = externalStates{}
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	sem := make(chan struct{}, r.CreateParallelism)
	for _, in := range obs.Instances {
		if in.Deleting() {
			continue
		}
		if !recordedExternal(in.Exporter) {
			// Under mu: the goroutines of earlier instances write the same map.
			mu.Lock()
			res.states[in.Exporter.UID] = &provisioner.ExternalState{Phase: provisioner.ExternalGone, Reason: "NotCreated"}
			mu.Unlock()
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			st, err := ext.ObserveExternal(ctx, req.ForExporter(in.Exporter.DeepCopy(), objects.ConfigSecretName(in.Name())))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", in.Name(), err))
				return
			}
			res.states[in.Exporter.UID] = &st
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		res.unreachable = errors.Join(errs...)
	}
	// The remote side is not watched: it is polled, soon while a target is on its way or
	// the remote end does not answer, and now and then to notice a target that failed.
	p.requeueIn(externalWatchInterval)
	for _, in := range obs.Instances {
		if st := res.states.of(in); st != nil && st.Phase != provisioner.ExternalReady || res.unreachable != nil {
			p.requeueIn(externalPollInterval)
			break
		}
	}
	return res, nil
}

// externalPollInterval is how often a set whose external targets are on their way (or
// whose remote end does not answer) is looked at; externalWatchInterval how often a set of
// ready external targets is, to notice one that failed.
const (
	externalPollInterval  = 2 * time.Second
	externalWatchInterval = 10 * time.Second
)

// recordedExternal reports whether CreateExternal's annotations are on e.
func recordedExternal(e *jumpstarterv1alpha1.Exporter) bool {
	return e.Annotations[AnnotationExternalRecorded] != ""
}

// externalProblem is the Problem an instance's external state st shows: a failed target is
// replaced like a crashing Pod's.
func externalProblem(in *pool.Instance, st *provisioner.ExternalState) *pool.Problem {
	if st == nil || st.Phase != provisioner.ExternalFailed || in.Deleting() || in.Retiring() {
		return nil
	}
	msg := st.Message
	if st.Reason != "" {
		msg = st.Reason + ": " + msg
	}
	return &pool.Problem{Reason: vtv1alpha1.ReasonExternalTargetFailed, Message: msg, Replace: true}
}

// externalReady reports whether an instance whose external state is st may start its Pod:
// always for a Pod-only instance (nil), and for an external one once its target is ready
// (its exporter registers, and gets leases, only with a target to serve).
func externalReady(st *provisioner.ExternalState) bool {
	return st == nil || st.Phase == provisioner.ExternalReady
}

// holds reports whether the set must wait for its remote end (or its credentials).
func (e externalResult) holds() bool { return e.unreachable != nil || e.credentials != "" }

// cleanupRequest is the request Cleanup gets: with the class's credentials for an external
// provisioner, whose Cleanup reaches the remote end.
func (r *Reconciler) cleanupRequest(ctx context.Context, p *pass) (*provisioner.Request, error) {
	if externalOf(p.prov) == nil {
		return p.req, nil
	}
	req, problem, err := r.externalRequest(ctx, p)
	if err == nil && problem != "" {
		err = errors.New(problem)
	}
	return req, err
}

// message says what could not be reached, quoting the provisioner.
func (e externalResult) message() string {
	return fmt.Sprintf("the external targets' remote end cannot be reached; their state is unknown and nothing is created or deleted until it answers: %v", e.unreachable)
}
