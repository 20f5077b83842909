package exporterset

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/exporterset/exporterset/exporterset/internal/contract"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/provisioner"
)

// The set controller decides, the instance controller (internal/controllers/instance)
// builds. What a set's last unblocked pass decided for its instances is published on the
// contract Board, one record per set, replaced whole by each pass: the request its instances
// are rendered from and, per instance, whether it gets a Pod now and which Pods are to be
// restarted. The instance controller reads it and never writes it; the pass pokes the
// instances whose inputs changed, so an instance is reconciled again only when there is
// something new for it.

// intentsOf are the decisions of a pass for the live instances it saw.
// held are instances whose restart waits for a later pass (their renewal's write lost).
func intentsOf(p *pass, plan *pool.Plan, backoffUntil time.Time, caPEM []byte, problems pool.Problems, ext externalStates, held map[types.UID]bool) *contract.Intents {
	// A hosted instance's unit is its Pod (hosted.go): it starts as a Pod does, with no
	// target to wait for first.
	hosted := objects.Hosted(p.prov)
	external := externalOf(p.prov) != nil && !hosted
	// The instance reconciler reads the request while the pass goes on to write the set's
	// status, which decodes the answer into p.set: the request gets a set of its own.
	req := *p.req
	req.Set = p.set.DeepCopy()
	d := &contract.Intents{
		SetUID: p.set.UID, Generation: p.set.Generation, ClassVersion: p.class.ResourceVersion,
		Class: p.class, Prov: p.prov, Req: &req, Hash: p.hash, Selector: p.selector,
		HooksCfg: p.hooksCfg, Hooks: p.hooks,
		BackoffUntil: backoffUntil,
		Immediate:    plan.StartNew && !external,
		Instances:    map[types.UID]contract.Intent{},
	}
	d.Version = fmt.Sprintf("%s/%d/%s/%s/%x/%t", p.set.UID, p.set.Generation, p.class.ResourceVersion, p.hash, sha256.Sum256(caPEM), d.BackingOff(p.now))
	for _, in := range plan.StartPods {
		if !external || externalReady(ext.of(in)) { // an external instance's Pod waits for its target
			it := d.Instances[in.Exporter.UID]
			it.Start = true
			if hosted {
				// The unit the pass saw gone: a start asked for it is not made again once
				// its record has changed (a unit made since the pass looked).
				it.SeenRecord = in.Exporter.Annotations[AnnotationExternalRecorded]
			}
			d.Instances[in.Exporter.UID] = it
		}
	}
	for _, in := range plan.RestartPods {
		if held[in.Exporter.UID] {
			continue
		}
		it := d.Instances[in.Exporter.UID]
		it.Restart = true
		if problems.Replaces(in) && !in.Leased() {
			if pod := currentPod(in); pod != nil {
				it.Broken = pod.UID
			}
		}
		d.Instances[in.Exporter.UID] = it
	}
	for _, in := range plan.RestPods {
		if pod := in.ActivePod(); pod != nil && !in.Leased() && !held[in.Exporter.UID] {
			it := d.Instances[in.Exporter.UID]
			it.Restart, it.Broken = true, pod.UID // it rests: the Pod goes, the Exporter stays
			d.Instances[in.Exporter.UID] = it
		}
	}
	return d
}

// withTargets asks the instance controller for the external targets the pass observed
// missing (Gone, or never created), with req (the request with the class's credentials).
// An instance whose state is unknown (its remote end did not answer) gets none: the set is
// held until it answers. With resting set (the plan keeps a standby: nothing is wanted
// running), an unleased instance without a target gets none: the standby rests without a
// remote target until a Lease waits for it (pool/leasewait.go).
func withTargets(d *contract.Intents, req *provisioner.Request, live []*pool.Instance, states externalStates, resting bool) {
	d.Target = req
	if objects.Hosted(d.Prov) {
		return // a hosted unit is started as a Pod is (Intent.Start), once its config is rendered
	}
	for _, in := range live {
		st := states.of(in)
		if st == nil || st.Phase != provisioner.ExternalGone || resting && !in.Leased() {
			continue
		}
		it := d.Instances[in.Exporter.UID]
		it.CreateTarget, it.SeenRecord = true, in.Exporter.Annotations[AnnotationExternalRecorded]
		d.Instances[in.Exporter.UID] = it
	}
}

// pokeKey is what an instance's reconcile depends on beyond its own objects (whose events
// reach the instance reconciler directly): a poke is sent when it changes.
type pokeKey struct {
	version    string
	credential string // the credential Secret's resourceVersion: tokens rotate
	intent     contract.Intent
}

// pokeChanged pokes each live instance whose inputs changed since it was last poked (d is
// published already): a credentialed one, or one whose external target is to be created.
func (r *Reconciler) pokeChanged(ctx context.Context, p *pass, d *contract.Intents, live []*pool.Instance) {
	key := keyOf(p.set)
	for _, in := range live {
		it := d.Instances[in.Exporter.UID]
		if !in.Credentialed() && !it.CreateTarget {
			continue // its credential's arrival is an Exporter event of its own
		}
		if in.HasPod() {
			it.Start = false // a start decided for an instance that has its Pod asks nothing
		}
		k := pokeKey{version: d.Version, intent: it}
		if in.Credential != nil {
			k.credential = in.Credential.ResourceVersion
		}
		last, seen := r.memory.poked.ForInstance(key, in.Exporter.UID)
		if seen && last == k {
			continue
		}
		r.memory.poked.PutInstance(key, in.Exporter.UID, k)
		// First seen by a pass, or only its credential came into the cache (the label the
		// instance reconciler wrote): no poke when that reconciler has built it with these
		// very decisions already. Each poke of a pool in a scale-up queued a reconcile that
		// found nothing to do in front of the instances that had.
		fresh := !seen || last.credential == "" && last.version == k.version && last.intent == k.intent
		if fresh && r.builtWith(key, in, it, d.Version) {
			continue
		}
		r.poke(ctx, r.instancePokes, in.Exporter)
	}
}

// builtWith reports whether the instance controller last built in with the decisions of
// version, and in shows it built: its config Secret, and its Pod unless none is wanted. An
// instance whose target is to be created is not built.
func (r *Reconciler) builtWith(set string, in *pool.Instance, it contract.Intent, version string) bool {
	res, ok := r.Board.Result(set, in.Exporter.UID)
	return ok && res.Version == version && in.ConfigSecret != nil && !it.Restart && !it.CreateTarget && (in.HasPod() || !it.Start)
}

// withdraw forgets a set's decisions, and what its instances were poked with: until a pass
// decides again, the instance controller builds nothing new for the set, and that pass
// pokes every live instance again (one may have been passed over meanwhile).
func (r *Reconciler) withdraw(set string) {
	r.Board.Withdraw(set)
	r.memory.poked.Forget(set)
}

// poke queues o on the reconciler that ch feeds (nil before SetupWithManager: nothing
// runs to take it). The channel is buffered; a full one waits for its source to drain it,
// which it does continuously, or for ctx.
func (r *Reconciler) poke(ctx context.Context, ch chan event.GenericEvent, o client.Object) {
	if ch == nil {
		return
	}
	select {
	case ch <- event.GenericEvent{Object: o}:
	case <-ctx.Done():
	}
}
