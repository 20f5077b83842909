package soak

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
)

// Lease hooks that fail at random (issue 31). give-hooks gives a class (parameters.hooks) or
// a set (spec.parameters.hooks, deep-merged over its class's) an afterLease hook, now and
// then a beforeLease one too, for a while, then takes them away again (a deferred step, so
// the quiesce removes every hook before the settle: the walk ends with no failing check, and
// the circuit breaker, which a change of the set or its class resets, holds no replacement
// back then). jumpsim runs the scripts for real with /bin/sh: one passes (true), one always
// fails (exit 1), one times out (sleep past a 1 s timeout), and one fails for some leases
// only, by the digits of the lease's number in LEASE_NAME (lease-0042-beta: deterministic
// per lease, about k in 10 leases for k digits drawn), so an instance fails its check after
// some leases and passes after others. onFailure is drawn from endLease, exit and warn
// (warn reports Available: no quarantine). A hooks edit changes the spec hash, so it rolls
// the set's idle instances like any other edit and is told to the checker as a roll.
//
// The same step sometimes gives the set a short quarantine-ttl and a max-quarantined of 0 to
// 2 (annotations; they stay), so that quarantined instances are removed during the walk, by
// their TTL or the cap, and the checker judges those deletions.

// RollByHooks counts the rolls a hooks edit started.
const RollByHooks = "hooks"

// hookCatalogue lists the hook and idle-age actions and their weights.
func (wk *Walk) hookCatalogue() []action {
	return []action{{"give-hooks", 6, wk.giveHooks}, {"idle-age", 3, wk.idleAge}}
}

// idleAge gives a set a max-idle-age of 5 to 25 s (annotation) for 15 to 40 s, so that its
// idle instances are replaced by surge during the walk under everything else it does; a
// deferred step takes it away again (the quiesce at the latest), so the settle judges a pool
// that is not being rolled by age.
func (wk *Walk) idleAge(ctx context.Context) (string, bool, error) {
	p := wk.pickPool()
	if wk.idleAged[p.set] {
		return "", true, nil
	}
	age := time.Duration(5+wk.rng.Intn(21)) * time.Second
	d := time.Duration(15+wk.rng.Intn(26)) * time.Second
	setAge := func(value string) func(*vtv1alpha1.ExporterSet) {
		return func(s *vtv1alpha1.ExporterSet) {
			if value == "" {
				delete(s.Annotations, exporterset.AnnotationMaxIdleAge)
				return
			}
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			s.Annotations[exporterset.AnnotationMaxIdleAge] = value
		}
	}
	if err := wk.updateSet(ctx, p.set, setAge(age.String())); err != nil {
		return "", false, err
	}
	wk.idleAged[p.set] = true
	wk.later(d, "take the max-idle-age of set "+p.set+" away", func(ctx context.Context) error {
		if err := wk.updateSet(ctx, p.set, setAge("")); err != nil {
			return err
		}
		delete(wk.idleAged, p.set)
		return nil
	})
	return fmt.Sprintf("set %s: max-idle-age %s for %s", p.set, age, d), false, nil
}

// hookScript is one drawn script.
type hookScript struct {
	script  string
	timeout int
	what    string
}

// drawScript draws a script: passing, always failing, timing out, or failing for some
// leases.
func (wk *Walk) drawScript() hookScript {
	switch n := wk.rng.Intn(9); {
	case n < 2:
		return hookScript{"true", 5, "passes"}
	case n < 4:
		return hookScript{"exit 1", 5, "fails"}
	case n < 5:
		return hookScript{"sleep 3", 1, "times out"}
	default:
		k := 1 + wk.rng.Intn(5)
		digits := wk.rng.Perm(10)[:k]
		var b strings.Builder
		for _, d := range digits {
			fmt.Fprint(&b, d)
		}
		return hookScript{fmt.Sprintf(`case "$LEASE_NAME" in *[%s]-*) exit 1;; esac`, b.String()), 5, fmt.Sprintf("fails for leases numbered *[%s]", b.String())}
	}
}

// drawHook draws one hook: a script and an onFailure.
func (wk *Walk) drawHook() (map[string]any, string) {
	s := wk.drawScript()
	onFailure := []string{"endLease", "endLease", "endLease", "exit", "exit", "warn"}[wk.rng.Intn(6)]
	return map[string]any{"script": s.script, "timeout": s.timeout, "onFailure": onFailure},
		fmt.Sprintf("%s (onFailure %s)", s.what, onFailure)
}

// drawHooks draws an afterLease hook and, one time in four, a beforeLease hook.
func (wk *Walk) drawHooks() (map[string]any, string) {
	after, what := wk.drawHook()
	hooks := map[string]any{"afterLease": after}
	what = "afterLease " + what
	if wk.rng.Intn(4) == 0 {
		before, w := wk.drawHook()
		hooks["beforeLease"] = before
		what += ", beforeLease " + w
	}
	return hooks, what
}

// giveHooks gives a class or a set hooks for a while.
func (wk *Walk) giveHooks(ctx context.Context) (string, bool, error) {
	p := wk.pickPool()
	if wk.hooked[p.set] {
		return "", true, nil // its hooks are still on: taken away by a deferred step
	}
	hooks, what := wk.drawHooks()
	policy := ""
	if wk.rng.Intn(2) == 0 {
		ttl := time.Duration(5+wk.rng.Intn(30)) * time.Second
		maxKept := wk.rng.Intn(3)
		policy = fmt.Sprintf("; quarantine-ttl %s, max-quarantined %d", ttl, maxKept)
		if err := wk.updateSet(ctx, p.set, func(s *vtv1alpha1.ExporterSet) {
			if s.Annotations == nil {
				s.Annotations = map[string]string{}
			}
			s.Annotations[exporterset.AnnotationQuarantineTTL] = ttl.String()
			s.Annotations[exporterset.AnnotationMaxQuarantined] = fmt.Sprint(maxKept)
		}); err != nil {
			return "", false, err
		}
	}
	// The plugin's set gets class hooks only: set parameters on it could not carry the
	// revision key that keeps a spec from returning to an earlier hash (the plugin refuses
	// unknown keys).
	onSet := p.provisioner != PluginProvisioner && wk.rng.Intn(2) == 0
	d := time.Duration(10+wk.rng.Intn(20)) * time.Second
	wk.leaseToRunHooks(p, time.Duration(1+wk.rng.Intn(3))*time.Second, time.Duration(2+wk.rng.Intn(4))*time.Second)
	if onSet {
		if err := wk.setHooks(ctx, p, hooks); err != nil {
			return "", false, err
		}
		wk.hooked[p.set] = true
		wk.later(d, "take the hooks of set "+p.set+" away", func(ctx context.Context) error {
			if err := wk.setHooks(ctx, p, nil); err != nil {
				return err
			}
			delete(wk.hooked, p.set)
			return nil
		})
		return fmt.Sprintf("set %s: %s, for %s%s", p.set, what, d, policy), false, nil
	}
	if wk.deleted[p.class] != nil || wk.broken[p.class] {
		return "", true, nil // its re-creation or restore is pending
	}
	if err := wk.classHooks(ctx, p, hooks); err != nil {
		if apierrors.IsNotFound(err) {
			return "", true, nil
		}
		return "", false, err
	}
	wk.hooked[p.set] = true
	wk.later(d, "take the hooks of class "+p.class+" away", func(ctx context.Context) error {
		if err := wk.classHooks(ctx, p, nil); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		delete(wk.hooked, p.set)
		return nil
	})
	return fmt.Sprintf("class %s: %s, for %s%s", p.class, what, d, policy), false, nil
}

// classHooks gives p's class these hooks (nil: none) at a new revision, keeping the rest of
// its parameters; a class deleted meanwhile is re-created with them.
func (wk *Walk) classHooks(ctx context.Context, p *pool, hooks map[string]any) error {
	prev := p.hooks
	p.hooks = hooks
	wk.rev++
	rev := wk.rev
	start := time.Now()
	err := wk.updateClass(ctx, p.class, func(c *vtv1alpha1.VirtualTargetClass) { c.Spec.Parameters = classParameters(p, rev) })
	switch {
	case err == nil:
		wk.rolled(p.set, RollByHooks, start, 0)
	case apierrors.IsNotFound(err) && wk.deleted[p.class] != nil:
		wk.deleted[p.class].Spec.Parameters = classParameters(p, rev)
	default:
		p.hooks = prev
	}
	return err
}

// setHooks gives p's set these hooks in its spec.parameters (nil: none), with a new revision
// key so that the spec never returns to an earlier hash.
func (wk *Walk) setHooks(ctx context.Context, p *pool, hooks map[string]any) error {
	wk.rev++
	v := map[string]any{"soakSetRev": wk.rev}
	if hooks != nil {
		v["hooks"] = hooks
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	start := time.Now()
	err = wk.updateSet(ctx, p.set, func(s *vtv1alpha1.ExporterSet) { s.Spec.Parameters = &apiextensionsv1.JSON{Raw: raw} })
	if err == nil {
		wk.rolledSet(ctx, p.set, RollByHooks, start)
	}
	return err
}

// leaseToRunHooks takes a short lease of p's set a moment after its hooks were given (and
// were not taken away meanwhile), so that an instance built with them serves a lease and
// runs them: the walk's other leases often wait while the set is being disrupted.
func (wk *Walk) leaseToRunHooks(p *pool, after, duration time.Duration) {
	wk.later(after, "take a short lease of set "+p.set+" to run its hooks", func(ctx context.Context) error {
		if !wk.hooked[p.set] {
			return nil // taken away (the quiesce): nothing to run
		}
		if full, err := wk.leasesFull(ctx, p.set); err != nil || full {
			return err
		}
		wk.leaseSeq++
		name := fmt.Sprintf("lease-%04d-%s", wk.leaseSeq, p.set)
		if _, err := wk.w.sim.TakeLease(ctx, wk.w.ns, name, map[string]string{"board": p.set}, duration); err != nil {
			return err
		}
		wk.w.history.Record(KindNote, "walk: %s for board=%s, duration %s, to run its hooks", name, p.set, duration)
		return nil
	})
}
