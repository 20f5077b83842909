package exporterset

import (
	"context"
	"crypto/sha256"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/internal/exportercfg"
	"github.com/exporterset/exporterset/provisioner"
)

// The set reconciler decides, the instance reconciler (instancectl.go) builds. What a set's
// last unblocked pass decided for its instances is published here, one record per set,
// replaced whole by each pass: the request its instances are rendered from and, per
// instance, whether it gets a Pod now and which Pods are to be restarted. The instance
// reconciler reads it and never writes it; the pass pokes the instances whose inputs
// changed, so an instance is reconciled again only when there is something new for it.

// setIntents is one pass's decisions for its set's instances.
type setIntents struct {
	setUID       types.UID
	generation   int64
	classVersion string
	class        *vtv1alpha1.VirtualTargetClass
	prov         provisioner.Provisioner
	req          *provisioner.Request
	hash         string
	hooksCfg     *exportercfg.Hooks // the set's lease hooks (never modified), nil for none
	hooks        string             // hooksCfg as JSON
	selector     labels.Selector
	backoffUntil time.Time
	// immediate: an instance of the current spec gets its Pod as soon as it is configured,
	// before a pass has seen it (the plan's StartNew, but not for an external provisioner,
	// whose Pod waits for its target).
	immediate bool
	// version changes whenever something every instance's config depends on changes.
	version   string
	instances map[types.UID]intent
}

// intent is what the pass decided for one instance.
type intent struct {
	start   bool      // it should get a Pod now (plan.StartPods)
	restart bool      // its terminal Pods are deleted so that a fresh one starts (plan.RestartPods)
	broken  types.UID // with restart: its current Pod, deleted too (waiting will not help)
}

// backingOff reports whether the set's failure backoff holds Pod starts at now.
func (s *setIntents) backingOff(now time.Time) bool { return now.Before(s.backoffUntil) }

// intentsOf are the decisions of a pass for the live instances it saw.
// held are instances whose restart waits for a later pass (their renewal's write lost).
func intentsOf(p *pass, plan *pool.Plan, backoffUntil time.Time, caPEM []byte, problems pool.Problems, ext externalStates, held map[types.UID]bool) *setIntents {
	external := externalOf(p.prov) != nil
	// The instance reconciler reads the request while the pass goes on to write the set's
	// status, which decodes the answer into p.set: the request gets a set of its own.
	req := *p.req
	req.Set = p.set.DeepCopy()
	d := &setIntents{
		setUID: p.set.UID, generation: p.set.Generation, classVersion: p.class.ResourceVersion,
		class: p.class, prov: p.prov, req: &req, hash: p.hash, selector: p.selector,
		hooksCfg: p.hooksCfg, hooks: p.hooks,
		backoffUntil: backoffUntil,
		immediate:    plan.StartNew && !external,
		instances:    map[types.UID]intent{},
	}
	d.version = fmt.Sprintf("%s/%d/%s/%s/%x/%t", p.set.UID, p.set.Generation, p.class.ResourceVersion, p.hash, sha256.Sum256(caPEM), d.backingOff(p.now))
	for _, in := range plan.StartPods {
		if !external || externalReady(ext.of(in)) { // an external instance's Pod waits for its target
			it := d.instances[in.Exporter.UID]
			it.start = true
			d.instances[in.Exporter.UID] = it
		}
	}
	for _, in := range plan.RestartPods {
		if held[in.Exporter.UID] {
			continue
		}
		it := d.instances[in.Exporter.UID]
		it.restart = true
		if problems.Replaces(in) && !in.Leased() {
			if pod := currentPod(in); pod != nil {
				it.broken = pod.UID
			}
		}
		d.instances[in.Exporter.UID] = it
	}
	for _, in := range plan.RestPods {
		if pod := in.ActivePod(); pod != nil && !in.Leased() && !held[in.Exporter.UID] {
			it := d.instances[in.Exporter.UID]
			it.restart, it.broken = true, pod.UID // it rests: the Pod goes, the Exporter stays
			d.instances[in.Exporter.UID] = it
		}
	}
	return d
}

// pokeKey is what an instance's reconcile depends on beyond its own objects (whose events
// reach the instance reconciler directly): a poke is sent when it changes.
type pokeKey struct {
	version    string
	credential string // the credential Secret's resourceVersion: tokens rotate
	intent     intent
}

// pokeChanged pokes each live, credentialed instance whose inputs changed since it was
// last poked (d is published already).
func (r *Reconciler) pokeChanged(ctx context.Context, p *pass, d *setIntents, live []*pool.Instance) {
	key := keyOf(p.set)
	for _, in := range live {
		if !in.Credentialed() {
			continue // its credential's arrival is an Exporter event of its own
		}
		it := d.instances[in.Exporter.UID]
		if in.HasPod() {
			it.start = false // a start decided for an instance that has its Pod asks nothing
		}
		k := pokeKey{version: d.version, intent: it}
		if in.Credential != nil {
			k.credential = in.Credential.ResourceVersion
		}
		last, seen := r.memory.poked.forInstance(key, in.Exporter.UID)
		if seen && last == k {
			continue
		}
		r.memory.poked.putInstance(key, in.Exporter.UID, k)
		// First seen by a pass, or only its credential came into the cache (the label the
		// instance reconciler wrote): no poke when that reconciler has built it with these
		// very decisions already. Each poke of a pool in a scale-up queued a reconcile that
		// found nothing to do in front of the instances that had.
		fresh := !seen || last.credential == "" && last.version == k.version && last.intent == k.intent
		if fresh && r.builtWith(key, in, it, d.version) {
			continue
		}
		r.poke(ctx, r.instancePokes, in.Exporter)
	}
}

// builtWith reports whether the instance reconciler last built in with the decisions of
// version, and in shows it built: its config Secret, and its Pod unless none is wanted.
func (r *Reconciler) builtWith(set string, in *pool.Instance, it intent, version string) bool {
	res, ok := r.memory.results.forInstance(set, in.Exporter.UID)
	return ok && res.version == version && in.ConfigSecret != nil && !it.restart && (in.HasPod() || !it.start)
}

// withdraw forgets a set's decisions, and what its instances were poked with: until a pass
// decides again, the instance reconciler builds nothing new for the set, and that pass
// pokes every live instance again (one may have been passed over meanwhile).
func (r *Reconciler) withdraw(set string) {
	r.memory.intents.dropSet(set)
	r.memory.poked.forget(set)
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

// putResult records what building an instance met, and reports whether it differs from
// what was recorded before: the set's conditions change then.
func (m *memory) putResult(set string, uid types.UID, res configureResult) bool {
	last, ok := m.results.forInstance(set, uid)
	m.results.putInstance(set, uid, res)
	if !ok {
		return res.credMissing != "" || res.podErr != nil
	}
	return !sameResult(last, res)
}

func sameResult(a, b configureResult) bool {
	msg := func(err error) string {
		if err == nil {
			return ""
		}
		return err.Error()
	}
	return a.waitingCred == b.waitingCred && a.credMissing == b.credMissing && msg(a.podErr) == msg(b.podErr)
}
