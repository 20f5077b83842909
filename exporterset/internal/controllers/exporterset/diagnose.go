package exporterset

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// DefaultStartupDeadline is a class's startupDeadline when it sets none.
const DefaultStartupDeadline = 10 * time.Minute

// DefaultRegistrationGrace is how long an exporter may run before "not registered" is a
// problem: upstream marks an exporter Online when it has been seen within the last minute.
const DefaultRegistrationGrace = time.Minute

// diagnosis are the rules' parameters.
type diagnosis struct {
	now               time.Time
	startupDeadline   time.Duration
	registrationGrace time.Duration
}

// image pull and container creation reasons of the kubelet (kubelet/images, kuberuntime).
var (
	pullFailures   = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true, "ErrImageInspect": true}
	createFailures = map[string]bool{"CreateContainerConfigError": true, "CreateContainerError": true, "RunContainerError": true, "PreCreateHookError": true, "PostStartHookError": true}
)

// diagnose returns the instance's problem, or nil. It is pure. Instances on their way out
// (being deleted or retired) and quarantined ones (kept for inspection) have none: they no
// longer count.
func (d diagnosis) diagnose(in *pool.Instance) *pool.Problem {
	if objects.OutOfPool(in) {
		return nil
	}
	pod := currentPod(in)
	if pod == nil {
		return nil // not started: waiting for credentials or a consumer, reported elsewhere
	}
	pr := podProblem(pod, d.now)
	if pr == nil && pod.Status.Phase == corev1.PodRunning && !in.Ready() {
		if since := runningSince(pod); !since.IsZero() && d.now.Sub(since) >= d.registrationGrace {
			pr = &pool.Problem{Reason: vtv1alpha1.ReasonNotRegistering, Message: notRegisteringMessage(in.Exporter, d.now.Sub(since))}
		}
	}
	if !in.Ready() && d.startupDeadline > 0 && d.now.Sub(pod.CreationTimestamp.Time) >= d.startupDeadline {
		if pr == nil {
			pr = &pool.Problem{Reason: vtv1alpha1.ReasonStartupDeadlineExceeded, Message: fmt.Sprintf("Pod %s is %s and its exporter is not ready", pod.Name, podPhase(pod))}
		}
		pr.Replace = true
		pr.Message += fmt.Sprintf(" (not ready %s after its Pod was created; startupDeadline %s)", d.now.Sub(pod.CreationTimestamp.Time).Round(time.Second), d.startupDeadline)
	}
	return pr
}

// recheckIn is when the instance's diagnosis changes by time alone (the registration grace
// or the startup deadline runs out); 0 when it does not. Nothing else wakes the set then.
func (d diagnosis) recheckIn(in *pool.Instance) time.Duration {
	pod := currentPod(in)
	if pod == nil || in.Ready() || objects.OutOfPool(in) {
		return 0
	}
	var next time.Duration
	soonest := func(at time.Time) {
		if wait := at.Sub(d.now); wait > 0 && (next == 0 || wait < next) {
			next = wait
		}
	}
	if since := runningSince(pod); !since.IsZero() {
		soonest(since.Add(d.registrationGrace))
	}
	if d.startupDeadline > 0 {
		soonest(pod.CreationTimestamp.Add(d.startupDeadline))
	}
	return next
}

// currentPod is the Pod the instance runs on: the newest one not being deleted.
func currentPod(in *pool.Instance) *corev1.Pod {
	var cur *corev1.Pod
	for _, p := range in.Pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		if cur == nil || cur.CreationTimestamp.Before(&p.CreationTimestamp) {
			cur = p
		}
	}
	return cur
}

// podProblem reads a failure from Pod status alone, most decisive first: a terminal or lost
// Pod, then scheduling, then the containers.
func podProblem(pod *corev1.Pod, now time.Time) *pool.Problem {
	switch pod.Status.Phase {
	case corev1.PodFailed:
		if pod.Status.Reason == "Evicted" {
			return &pool.Problem{Reason: vtv1alpha1.ReasonEvicted, Message: orDefault(pod.Status.Message, "the kubelet evicted the Pod"), Replace: true}
		}
		if pr := terminatedProblem(pod); pr != nil {
			return pr
		}
		return &pool.Problem{Reason: vtv1alpha1.ReasonTargetCrashing, Message: orDefault(pod.Status.Message, "the Pod failed"), Replace: true}
	case corev1.PodSucceeded:
		return nil // the exporter exited after its lease: recycling, not a failure
	case corev1.PodUnknown:
		return &pool.Problem{Reason: vtv1alpha1.ReasonNodeLost, Message: orDefault(pod.Status.Message, fmt.Sprintf("node %q stopped reporting the Pod's state", pod.Spec.NodeName)), Replace: true}
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return &pool.Problem{Reason: vtv1alpha1.ReasonUnschedulable, Message: c.Message}
		}
	}
	for _, cs := range containerStatuses(pod) {
		w := cs.State.Waiting
		switch {
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0:
			// Under restartPolicy Never a failed container stays so while the others run:
			// the Pod is Running, its target dead.
			return &pool.Problem{Reason: vtv1alpha1.ReasonTargetCrashing, Container: cs.Name, Image: imageOf(pod, cs), Message: "terminated: " + terminationText(cs.State.Terminated), Replace: true}
		case w == nil && recentCrash(cs, now):
			// Between two crashes a crash-looping container runs for a moment: it is no
			// healthier than during its back-off.
			return &pool.Problem{Reason: vtv1alpha1.ReasonTargetCrashing, Container: cs.Name, Image: imageOf(pod, cs),
				Message: fmt.Sprintf("restarted %d times; last exit: %s", cs.RestartCount, terminationText(cs.LastTerminationState.Terminated)), Replace: true}
		case w == nil:
		case pullFailures[w.Reason]:
			return &pool.Problem{Reason: vtv1alpha1.ReasonImagePullFailed, Container: cs.Name, Image: imageOf(pod, cs), Message: w.Reason + ": " + w.Message}
		case w.Reason == "CrashLoopBackOff":
			msg := fmt.Sprintf("CrashLoopBackOff after %d restarts", cs.RestartCount)
			if t := cs.LastTerminationState.Terminated; t != nil {
				msg += "; last exit: " + terminationText(t)
			}
			return &pool.Problem{Reason: vtv1alpha1.ReasonTargetCrashing, Container: cs.Name, Image: imageOf(pod, cs), Message: msg + ": " + w.Message, Replace: true}
		case createFailures[w.Reason]:
			return &pool.Problem{Reason: vtv1alpha1.ReasonContainerCreateFailed, Container: cs.Name, Image: imageOf(pod, cs), Message: w.Reason + ": " + w.Message}
		}
	}
	return nil
}

// terminatedProblem names the container whose non-zero exit failed the Pod.
func terminatedProblem(pod *corev1.Pod) *pool.Problem {
	for _, cs := range containerStatuses(pod) {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return &pool.Problem{Reason: vtv1alpha1.ReasonTargetCrashing, Container: cs.Name, Image: imageOf(pod, cs), Message: "terminated: " + terminationText(t), Replace: true}
		}
	}
	return nil
}

// crashMemory is how long a container's last crash counts: the kubelet forgets a container's
// restart back-off once it has run for 10 minutes (twice the 5-minute cap).
const crashMemory = 10 * time.Minute

// recentCrash reports a restarted container whose last run ended in an error within
// crashMemory.
func recentCrash(cs corev1.ContainerStatus, now time.Time) bool {
	t := cs.LastTerminationState.Terminated
	return cs.RestartCount > 0 && t != nil && t.ExitCode != 0 && now.Sub(t.FinishedAt.Time) < crashMemory
}

func terminationText(t *corev1.ContainerStateTerminated) string {
	s := fmt.Sprintf("exit code %d", t.ExitCode)
	if t.Reason != "" {
		s += " (" + t.Reason + ")"
	}
	if m := oneLine(t.Message); m != "" {
		s += ": " + m
	}
	return s
}

// oneLine makes a container's termination message fit a condition message: a real program's
// message (its termination log, or its last log lines) ends with a newline and may span
// several lines.
func oneLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	out := lines[:0]
	for _, l := range lines {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "; ")
}

// containerStatuses lists init containers (the runtime sidecar among them) before the
// main ones: a failing init container is why the main ones never start.
func containerStatuses(pod *corev1.Pod) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, 0, len(pod.Status.InitContainerStatuses)+len(pod.Status.ContainerStatuses))
	out = append(out, pod.Status.InitContainerStatuses...)
	return append(out, pod.Status.ContainerStatuses...)
}

// imageOf is the image as the Pod spec names it (the status may hold a resolved digest).
func imageOf(pod *corev1.Pod, cs corev1.ContainerStatus) string {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range list {
			if c.Name == cs.Name {
				return c.Image
			}
		}
	}
	return cs.Image
}

// runningSince is when the Pod's main containers all ran: the latest start among them.
func runningSince(pod *corev1.Pod) time.Time {
	var at time.Time
	for _, cs := range pod.Status.ContainerStatuses {
		r := cs.State.Running
		if r == nil {
			return time.Time{} // not all running yet
		}
		if r.StartedAt.After(at) {
			at = r.StartedAt.Time
		}
	}
	if at.IsZero() && pod.Status.StartTime != nil {
		at = pod.Status.StartTime.Time
	}
	return at
}

func notRegisteringMessage(e *jumpstarterv1alpha1.Exporter, running time.Duration) string {
	msg := fmt.Sprintf("the Pod has run for %s but the exporter has not registered with the Jumpstarter controller at %q", running.Round(time.Second), e.Status.Endpoint)
	if e.Status.StatusMessage != "" {
		msg += ": " + e.Status.StatusMessage
	}
	return msg
}

func podPhase(pod *corev1.Pod) string {
	if pod.Status.Phase == "" {
		return "Pending"
	}
	return string(pod.Status.Phase)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// diagnose returns each instance's Problem (from its external state ext, else from its Pod
// and Exporter), the pool's failures and the set's failure backoff. caPEM is the CA
// bundle the set's instances are configured with (nil when none was read yet).
func (r *Reconciler) diagnose(p *pass, obs *observation, ext externalStates, caPEM []byte) health {
	d := diagnosis{now: p.now, startupDeadline: DefaultStartupDeadline, registrationGrace: r.RegistrationGrace}
	version := fmt.Sprintf("%s/%d", p.set.UID, p.set.Generation)
	if p.class != nil {
		if sd := p.class.Spec.StartupDeadline; sd != nil {
			d.startupDeadline = sd.Duration
		}
		version += fmt.Sprintf("/%s/%s", p.class.UID, p.class.ResourceVersion)
	}
	// The CA is an input too: a person who fixes a bad bundle gets a fresh attempt at once,
	// not after the backoff its failures built (a failing set reads it again within cabundle.TTL).
	if caPEM != nil {
		version += fmt.Sprintf("/ca:%x", sha256.Sum256(caPEM))
	}
	problems := pool.Problems{}
	renew := r.renewals(p, obs) // the last enabled Exporter's failed check (quarantine_lastplace.go)
	for _, in := range obs.Instances {
		var pr *pool.Problem
		if !objects.OutOfPool(in) {
			// An instance on its way out or quarantined has no problem, whatever its source:
			// the status's failingReplicas and the conditions' failures count the same ones
			// (a renewal noted before a later quarantine once made them differ).
			pr = renew.Of(in)
			if pr == nil {
				// A failed target first: it is the cause of what its Pod (or, for a hosted
				// unit, the Pod it reads as) shows.
				pr = externalProblem(in, ext.of(in))
			}
			if pr == nil {
				pr = d.diagnose(in)
			}
		}
		if pr != nil {
			problems[in.Exporter.UID] = pr
		}
		// Whole seconds (the Pod's times are) plus a margin, so the pass lands after the edge.
		if wait := d.recheckIn(in); wait > 0 {
			p.requeueIn(wait + 100*time.Millisecond)
		}
	}
	return health{
		problems: problems,
		failures: summarizeFailures(obs.Instances, problems),
		backoff:  r.failureMemory.observe(keyOf(p.set), version, p.now, obs.Instances, problems, r.BackoffBase, r.BackoffCap),
	}
}

// isFailureReason reports whether reason is an instance failure or the backoff after them.
func isFailureReason(reason vtv1alpha1.ConditionReason) bool {
	_, ok := failureOrder[reason]
	return ok || reason == vtv1alpha1.ReasonBackingOff || reason == vtv1alpha1.ReasonReuseCheckFailing
}
