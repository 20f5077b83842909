package jumpsim

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/leasehook"
)

// The lease hooks of a simulated exporter process (its config's hooks, see
// internal/testing/leasehook): run for real on this host, in the order and with the reports of
// upstream's exporter. A hook's reports are the process's exporterStatus while they hold;
// a lease's start and end set the first one in the same write as the leaseRef, so the
// scheduler never sees the process Available between a lease and its hooks.

// hookPhase is where a process is in its hooks.
type hookPhase int

const (
	phaseBefore hookPhase = iota + 1 // its lease's beforeLease hook (or LeaseReady after it)
	phaseAfter                       // after its lease: the afterLease hook, or Available after it
	phaseExit                        // a hook failed with onFailure exit: Offline, exiting with code 1
)

// hookRun is what one exporter process did about the hooks of its latest lease.
type hookRun struct {
	pod       types.UID // the process: its Pod
	phase     hookPhase
	lease     string // the lease the phase is about
	report    leasehook.Report
	skipAfter bool // the beforeLease hook of lease failed (endLease, exit): no afterLease hook
	hasAfter  bool // the process has an afterLease hook
	// afterBusy: the afterLease hook of lease runs, and an exitOnLeaseEnd process waits for it.
	afterBusy bool
	// afterStarted: the afterLease hook of lease was started; a later look at the lease's
	// end (a cache behind the leaseRef's clearing) changes nothing.
	afterStarted bool
	// exitNow: the process exits with code 1 now (a hook failed with exit, its lease is over).
	exitNow bool
	// failure is the failed hook's report message, the process's last words when it exits.
	failure string
	// seq makes the afterLease hook wait for the beforeLease hook, as upstream's exporter does.
	seq *sync.Mutex
}

type hookState struct {
	mu   sync.Mutex
	runs map[types.UID]*hookRun // by Exporter UID
}

func newHookState() *hookState { return &hookState{runs: map[types.UID]*hookRun{}} }

// get returns a copy of the run of Exporter uid.
func (h *hookState) get(uid types.UID) (hookRun, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.runs[uid]
	if !ok {
		return hookRun{}, false
	}
	return *r, true
}

// update changes the run of Exporter uid if it is still about pod and lease; ok says it was.
func (h *hookState) update(uid, pod types.UID, lease string, change func(*hookRun)) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	r, ok := h.runs[uid]
	if !ok || r.pod != pod || r.lease != lease {
		return false
	}
	change(r)
	return true
}

// forgetOtherProcesses drops the run of Exporter uid unless it is pod's: a new process
// starts without the old one's hooks.
func (h *hookState) forgetOtherProcesses(uid, pod types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r, ok := h.runs[uid]; ok && r.pod != pod {
		delete(h.runs, uid)
	}
}

// forgetExporter drops the run of a deleted Exporter.
func (h *hookState) forgetExporter(uid types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.runs, uid)
}

// reportFor is the exporterStatus the process of ex reports because of its hooks, if any:
// the run's report while ex's leaseRef matches its phase, and always once it is exiting.
func (h *hookState) reportFor(ex *jsv1.Exporter) (leasehook.Report, bool) {
	r, ok := h.get(ex.UID)
	if !ok {
		return leasehook.Report{}, false
	}
	ref := ex.Status.LeaseRef
	switch {
	case r.phase == phaseExit,
		r.phase == phaseBefore && ref != nil && ref.Name == r.lease,
		r.phase == phaseAfter && ref == nil:
		return r.report, true
	}
	return leasehook.Report{}, false
}

// holdsExit reports whether the exitOnLeaseEnd process of Exporter uid in pod still runs
// after lease ended: upstream's exporter runs the afterLease hook before it exits. Only a
// lease whose start the process saw is waited for.
func (h *hookState) holdsExit(uid, pod types.UID, lease string) bool {
	r, ok := h.get(uid)
	if !ok || r.pod != pod || r.lease != lease {
		return false
	}
	return r.afterBusy || r.phase == phaseBefore && r.hasAfter && !r.skipAfter
}

// drop forgets the run of Exporter uid if it is about pod and lease ("" for any lease).
func (h *hookState) drop(uid, pod types.UID, lease string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r, ok := h.runs[uid]; ok && r.pod == pod && (lease == "" || r.lease == lease) {
		delete(h.runs, uid)
	}
}

// exitReport is the last report of an Exporter whose process exited after a failed hook.
func (h *hookState) exitReport(uid types.UID) (leasehook.Report, bool) {
	r, ok := h.get(uid)
	return r.report, ok && r.phase == phaseExit
}

// exitMessage is the termination message of the process in pod when a hook made it exit.
func (h *hookState) exitMessage(pod *corev1.Pod) (string, bool) {
	uid, _, ok := controllerUID(pod, "Exporter")
	if !ok {
		return "", false
	}
	r, ok := h.get(uid)
	if !ok || r.pod != pod.UID || !r.exitNow {
		return "", false
	}
	return r.lastWords(), true
}

// lastWords is the failure the process exits with (the failed hook's report), one line, as
// the stand-in exporter prints it.
func (r hookRun) lastWords() string { return r.failure + "\n" }

// hookExited reports whether ex's process exited (or is exiting) after a hook that failed
// with onFailure exit.
func hookExited(s *Simulator, ex *jsv1.Exporter) bool {
	_, ok := s.hooks.exitReport(ex.UID)
	return ok
}
