package jumpsim

import (
	"context"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/internal/exportercfg"
	"github.com/exporterset/exporterset/internal/testing/leasehook"
)

// How a simulated process runs its hooks: at a lease's start and end (called by the
// scheduler's writes), in the background, and its exit after a hook failed with exit.

// processHooks returns the hooks of the exporter process of ex that runs now (its Running,
// non-terminating Pod's config) and that Pod; nil hooks when there are none. On a real node
// the real process runs its own hooks.
func (s *Simulator) processHooks(ctx context.Context, ex *jsv1.Exporter) (*exportercfg.Hooks, *corev1.Pod) {
	if s.opts.realNode {
		return nil, nil
	}
	pods, err := s.controlledPods(ctx, ex.Namespace, ex.UID)
	if err != nil {
		return nil, nil
	}
	for i := range pods {
		pod := &pods[i]
		if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
			continue
		}
		if cfg, _, ok := s.readExporterConfig(ctx, pod); ok && !cfg.Hooks.Empty() {
			return cfg.Hooks, pod
		}
		return nil, nil
	}
	return nil, nil
}

// leaseStarting is called before ex's leaseRef is set to lease: a process with hooks
// reports BeforeLeaseHook (or LeaseReady "Ready for commands" without a beforeLease hook)
// in that same write. It returns the report when it set one, and the hooks when the
// beforeLease hook is to start once the write is done.
func (s *Simulator) leaseStarting(ctx context.Context, ex *jsv1.Exporter, lease string) (*exportercfg.Hooks, types.UID, *leasehook.Report) {
	hooks, pod := s.processHooks(ctx, ex)
	if hooks == nil {
		return nil, "", nil
	}
	h := s.hooks
	h.mu.Lock()
	defer h.mu.Unlock()
	if r, ok := h.runs[ex.UID]; ok && r.pod == pod.UID && (r.lease == lease || r.phase == phaseExit) {
		return nil, "", nil // started already (a retried write), or the process is on its way out
	}
	r := &hookRun{pod: pod.UID, phase: phaseBefore, lease: lease, report: leasehook.Before.Done(), hasAfter: hooks.AfterLease != nil, seq: &sync.Mutex{}}
	if old, ok := h.runs[ex.UID]; ok && old.pod == pod.UID {
		r.seq = old.seq
	}
	if hooks.BeforeLease == nil {
		h.runs[ex.UID] = r
		rep := r.report // a copy: r changes under h.mu only
		return nil, pod.UID, &rep
	}
	r.report = leasehook.Before.Running()
	h.runs[ex.UID] = r
	rep := r.report
	return hooks, pod.UID, &rep
}

// leaseEnding is called before ex's leaseRef (naming lease) is cleared. A process with
// hooks runs its afterLease hook (reporting AfterLeaseHook in that same write) unless its
// beforeLease hook failed; one exiting after a failed hook exits now. The result says what
// to do once the write is done; handled says the hooks decide the status (an exitOnLeaseEnd
// process does not exit before its afterLease hook is done).
func (s *Simulator) leaseEnding(ctx context.Context, ex *jsv1.Exporter, lease string, exiting bool) (e leaseEnd, handled bool) {
	hooks, p := s.processHooks(ctx, ex)
	h := s.hooks
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.runs[ex.UID]
	if !ok || p == nil || r.pod != p.UID {
		return leaseEnd{}, false
	}
	switch {
	case r.phase == phaseExit:
		r.exitNow = true // its lease is over: it exits
		return leaseEnd{pod: p.UID}, true
	case r.lease != lease:
		return leaseEnd{}, false
	case r.afterStarted:
		return leaseEnd{}, true // seen already: the write that follows finds nothing to do
	case hooks != nil && hooks.AfterLease != nil && !r.skipAfter:
		rep := leasehook.After.Running()
		r.phase, r.report, r.afterBusy = phaseAfter, rep, true
		return leaseEnd{hooks: hooks, pod: p.UID, report: &rep}, true
	case exiting:
		// No afterLease hook to wait for: it exits as one without hooks does.
		r.phase, r.report = phaseAfter, leasehook.After.Done()
		return leaseEnd{}, false
	default:
		rep := leasehook.After.Done()
		r.phase, r.report = phaseAfter, rep
		return leaseEnd{report: &rep}, true
	}
}

// leaseEnd is what follows a lease's end for a process with hooks: its afterLease hook
// runs (hooks), it exits (pod without hooks), and the report made with the end.
type leaseEnd struct {
	hooks  *exportercfg.Hooks
	pod    types.UID
	report *leasehook.Report
}

// runHook runs the hook of kind for lease in the background and reports as upstream's
// exporter does.
func (s *Simulator) runHook(ctx context.Context, ex *jsv1.Exporter, pod types.UID, lease string, kind leasehook.Kind, hooks *exportercfg.Hooks, exiting bool) {
	key := client.ObjectKeyFromObject(ex)
	uid := ex.UID
	r, ok := s.hooks.get(uid)
	if !ok {
		return
	}
	if kind == leasehook.After {
		s.hooks.update(uid, pod, lease, func(r *hookRun) { r.afterStarted = true })
	}
	go func() {
		r.seq.Lock()
		defer r.seq.Unlock()
		if kind == leasehook.After && s.afterSkipped(ctx, key, uid, pod, lease, exiting) {
			return
		}
		s.record("hooks", ActionHookStarted, "Exporter", key.Namespace, key.Name, "%s hook for lease %s", kind.Name(), lease)
		out := leasehook.RunKind(ctx, kind, hooks, s.hookEnv(ctx, key.Namespace, lease))
		detail := "succeeded"
		if out.Failed() {
			detail = out.Failure + " (onFailure " + string(out.Action) + ")"
		}
		s.record("hooks", ActionHookFinished, "Exporter", key.Namespace, key.Name, "%s hook for lease %s: %s", kind.Name(), lease, detail)
		reports := out.Reports()
		phase := phaseBefore
		if kind == leasehook.After {
			phase = phaseAfter
		}
		// report makes rep the process's status, if it is still where the hook left it.
		report := func(rep leasehook.Report, change func(*hookRun)) bool {
			applied := false
			s.hooks.update(uid, pod, lease, func(r *hookRun) {
				if r.phase == phase || r.phase == phaseExit {
					r.report, applied = rep, true
					if change != nil {
						change(r)
					}
				}
			})
			if applied {
				s.reportStatus(ctx, key, rep)
			}
			return applied
		}
		if out.Failed() && out.Action != exportercfg.OnFailureWarn {
			// Whatever phase the lease is in by now: no afterLease hook follows.
			s.hooks.update(uid, pod, lease, func(r *hookRun) { r.skipAfter = true })
		}
		switch {
		case out.Exits():
			report(reports[0], func(r *hookRun) { r.phase, r.failure = phaseExit, reports[0].Message })
			report(reports[1], nil)
			if kind == leasehook.After {
				sleepCtx(ctx, leasehook.ReleaseDelay) // upstream waits before it shuts down
				s.hooks.update(uid, pod, lease, func(r *hookRun) { r.exitNow, r.afterBusy = true, false })
			}
			// After beforeLease, the process waits for its lease to end (leaseEnding).
		case out.EndsLease() && kind == leasehook.Before:
			if !report(reports[0], nil) {
				return
			}
			sleepCtx(ctx, leasehook.ReleaseDelay)
			s.requestRelease(ctx, key.Namespace, lease)
		case out.EndsLease():
			report(reports[0], nil)
			sleepCtx(ctx, leasehook.ReleaseDelay)
			// The lease is over already: its release asks for nothing. The status is
			// transient: the process takes new leases.
			if !exiting {
				report(leasehook.After.Done(), nil)
			}
			s.hooks.update(uid, pod, lease, func(r *hookRun) { r.afterBusy = false })
		case kind == leasehook.After && exiting:
			// It exits without reporting Available: see doc.go.
			s.hooks.update(uid, pod, lease, func(r *hookRun) { r.afterBusy = false })
		default:
			report(reports[0], func(r *hookRun) { r.afterBusy = false })
		}
		s.pokePod(ctx, key.Namespace, pod)
	}()
}

// afterSkipped handles an afterLease hook that is not to run after all: the beforeLease hook
// of its lease failed (endLease or exit) while it waited for it. The process is then
// Available (or exits) as upstream's exporter is after skipping it. It reports whether the
// hook was skipped.
func (s *Simulator) afterSkipped(ctx context.Context, key types.NamespacedName, uid, pod types.UID, lease string, exiting bool) bool {
	r, ok := s.hooks.get(uid)
	if ok && r.pod == pod && r.lease == lease && r.phase == phaseAfter && !r.skipAfter {
		return false
	}
	done := leasehook.After.Done()
	if s.hooks.update(uid, pod, lease, func(r *hookRun) {
		if r.phase == phaseAfter {
			r.report, r.afterBusy = done, false
		}
	}) && !exiting && r.phase == phaseAfter {
		s.reportStatus(ctx, key, done)
	}
	s.pokePod(ctx, key.Namespace, pod)
	return true
}

// reportStatus writes the status the process now reports, as the controller does on a
// ReportStatus call.
func (s *Simulator) reportStatus(ctx context.Context, key types.NamespacedName, rep leasehook.Report) {
	s.recordReport(key, rep)
	if _, err := s.syncExporter(ctx, reconcile.Request{NamespacedName: key}, s.direct); err != nil {
		s.poke(ctx, s.exporterPokes, &jsv1.Exporter{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
	}
}

// recordReport records a report of the process of key.
func (s *Simulator) recordReport(key types.NamespacedName, rep leasehook.Report) {
	s.record("hooks", ActionStatusReported, "Exporter", key.Namespace, key.Name, "%s: %s", rep.Status, rep.Message)
}

// requestRelease asks for lease to be released, as an exporter's release request makes the
// controller do.
func (s *Simulator) requestRelease(ctx context.Context, namespace, lease string) {
	l := &jsv1.Lease{}
	if err := s.direct.Get(ctx, types.NamespacedName{Namespace: namespace, Name: lease}, l); err != nil {
		return
	}
	if _, err := s.writeObject(ctx, l, func() bool {
		if l.Spec.Release || l.Status.Ended {
			return false
		}
		l.Spec.Release = true
		return true
	}); err != nil {
		s.record("hooks", ActionError, "Lease", namespace, lease, "releasing the lease after a failed hook: %v", err)
	}
}

// pokePod lets the kubelet look at pod (a process that exits) and presence at its Exporter.
func (s *Simulator) pokePod(ctx context.Context, namespace string, uid types.UID) {
	var list corev1.PodList
	if err := s.client.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return
	}
	for i := range list.Items {
		if p := &list.Items[i]; p.UID == uid {
			s.poke(ctx, s.podPokes, p)
			if _, name, ok := controllerUID(p, "Exporter"); ok {
				s.poke(ctx, s.exporterPokes, &jsv1.Exporter{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}})
			}
		}
	}
}

// hookEnv is the environment upstream's exporter gives a hook (no JUMPSTARTER_HOST: there
// is no session to reach here).
func (s *Simulator) hookEnv(ctx context.Context, namespace, lease string) []string {
	client := ""
	var l jsv1.Lease
	if err := s.client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: lease}, &l); err == nil {
		client = l.Spec.ClientRef.Name
	}
	return leasehook.Env(lease, client)
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// exitAfterHook ends the exporter process of pod with exit code 1 after a lease hook failed
// with onFailure exit: its container terminates (Error, the failure as its message) and the
// Pod fails, or under restartPolicy Always the container restarts into a new process.
func (k *kubelet) exitAfterHook(ctx context.Context, pod *corev1.Pod, message string) error {
	src, _ := findConfigSource(pod)
	exUID, exName, _ := controllerUID(pod, "Exporter")
	if pod.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		wrote, err := k.setStatus(ctx, pod, func(p *corev1.Pod) corev1.PodStatus {
			return configFailedStatus(p, src.container, message)
		})
		if wrote {
			k.forgetPodState(pod.UID)
			k.s.record("kubelet", ActionPodFailed, "Pod", pod.Namespace, pod.Name, "exporter exited with code 1: %s", strings.TrimSpace(message))
		}
		return err
	}
	wrote, err := k.s.writeStatus(ctx, pod, func() bool {
		if pod.Status.Phase != corev1.PodRunning {
			return false
		}
		pod.Status = exitedStatus(pod, src.container, 1, "Error", message, metav1.Now())
		return true
	})
	if wrote {
		k.s.hooks.drop(exUID, pod.UID, "") // the new process starts without the old one's hooks
		k.s.record("kubelet", ActionPodRestarted, "Pod", pod.Namespace, pod.Name, "exporter exited with code 1: %s; restarted (restartPolicy Always)", strings.TrimSpace(message))
		k.s.poke(ctx, k.s.exporterPokes, &jsv1.Exporter{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: exName, UID: exUID}})
	}
	return err
}
