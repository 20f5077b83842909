package jumpsim

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// Defaults of the fault timings; see the options that change them.
const (
	// DefaultCrashLoopBackOff is the first restart back-off of a crashing container.
	DefaultCrashLoopBackOff = time.Second
	// DefaultCrashLoopBackOffMax caps the doubling restart back-off.
	DefaultCrashLoopBackOffMax = 10 * time.Second
	// DefaultImagePullBackOff is the wait between pulls of an image that failed.
	DefaultImagePullBackOff = 500 * time.Millisecond
	// DefaultOnlineTimeout is how long an exporter that stopped reporting stays Online.
	DefaultOnlineTimeout = time.Minute
)

// Crash describes how the containers running an image fail ([Simulator.SetCrash]).
type Crash struct {
	// ExitCode is the exit code of the crashed process, for example 1 or 137; 0 means 1.
	ExitCode int32
	// Reason is the container's terminated reason: "Error" (the default) or "OOMKilled".
	Reason string
	// Message is the optional termination message (the terminationMessagePath content).
	Message string
	// After is how long the container runs before it exits (0: at once after it started).
	After time.Duration
}

func (c Crash) normalized() Crash {
	if c.ExitCode == 0 {
		c.ExitCode = 1
	}
	if c.Reason == "" {
		c.Reason = "Error"
	}
	return c
}

// crashFault is a Crash and when it was set: a container already running when its image
// started crashing runs for After from then, not from its own start.
type crashFault struct {
	Crash
	since time.Time
}

// faultState holds the failures tests inject. The kubelet and presence read it on every
// sync, so a change applies on the next sync of each affected object (Set* pokes them).
type faultState struct {
	mu             sync.Mutex
	pull           map[string]string // image → registry message
	crash          map[string]crashFault
	notRegistering map[types.NamespacedName]string
	startDelay     atomic.Int64 // time.Duration
	regDelay       atomic.Int64 // time.Duration
}

func newFaultState(o options) *faultState {
	f := &faultState{
		pull:           map[string]string{},
		crash:          map[string]crashFault{},
		notRegistering: map[types.NamespacedName]string{},
	}
	f.startDelay.Store(int64(o.podStartDelay))
	f.regDelay.Store(int64(o.regDelay))
	return f
}

func (f *faultState) pullError(image string) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.pull[image]
	return m, ok
}

func (f *faultState) crashOf(image string) (crashFault, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c, ok := f.crash[image]
	return c, ok
}

func (f *faultState) anyCrash() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.crash) > 0
}

func (f *faultState) notRegisteringMessage(key types.NamespacedName) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m, ok := f.notRegistering[key]
	return m, ok
}

// SetImagePullError makes every pull of image fail, for init containers, native sidecars
// and regular containers alike: the container waits with reason ErrImagePull and the
// registry's message, then ImagePullBackOff with `Back-off pulling image "<image>":
// ErrImagePull: <message>` (the kubelet's wording), and its Pod stays Pending (PodScheduled
// stays True). An empty message stands for the registry's answer to a missing image:
// `failed to pull and unpack image "<ref>": failed to resolve reference "<ref>": <ref>: not
// found`, with ref the fully qualified reference. Containers that already run are not
// affected: their image is on the node.
func (s *Simulator) SetImagePullError(image, message string) {
	if message == "" {
		message = notFoundPullMessage(image)
	}
	s.faults.mu.Lock()
	s.faults.pull[image] = message
	s.faults.mu.Unlock()
	s.record("faults", ActionFaultSet, "Image", "", image, "image pull fails: %s", message)
	s.pokePodsAsync(func(p *corev1.Pod) bool { return podUsesImage(p, image) })
}

// ClearImagePullError lets pulls of image succeed again: waiting Pods start on their next
// pull attempt (within the image pull back-off, default [DefaultImagePullBackOff]).
func (s *Simulator) ClearImagePullError(image string) {
	s.faults.mu.Lock()
	_, had := s.faults.pull[image]
	delete(s.faults.pull, image)
	s.faults.mu.Unlock()
	if had {
		s.record("faults", ActionFaultCleared, "Image", "", image, "image pulls succeed again")
	}
	s.pokePodsAsync(func(p *corev1.Pod) bool { return podUsesImage(p, image) })
}

// SetCrash makes the long-running containers (regular containers and native sidecars, not
// init containers that run to completion) whose image is image exit as c says, c.After
// after they started or after this call, whichever is later.
//
// A regular container of a restartPolicy Never Pod stays terminated (exit code, reason,
// message) and the Pod becomes Failed. A native sidecar (or a container of a restartPolicy
// Always Pod) is restarted and crashes again: it waits in CrashLoopBackOff ("back-off 1s
// restarting failed container=<name> pod=<pod>_<namespace>(<uid>)") with the crash in
// lastState.terminated and restartCount rising, the back-off doubling from
// [WithCrashLoopBackOff]'s initial value; the Pod stays Running, with Ready and
// ContainersReady False.
func (s *Simulator) SetCrash(image string, c Crash) {
	c = c.normalized()
	s.faults.mu.Lock()
	s.faults.crash[image] = crashFault{Crash: c, since: time.Now()}
	s.faults.mu.Unlock()
	s.record("faults", ActionFaultSet, "Image", "", image, "containers crash after %s: exit code %d (%s)", c.After, c.ExitCode, c.Reason)
	s.pokePodsAsync(func(p *corev1.Pod) bool { return podUsesImage(p, image) })
}

// ClearCrash stops crashes of image: a crash-looping container runs for good after its
// current back-off. Containers that terminated for good (restartPolicy Never) stay so.
func (s *Simulator) ClearCrash(image string) {
	s.faults.mu.Lock()
	_, had := s.faults.crash[image]
	delete(s.faults.crash, image)
	s.faults.mu.Unlock()
	if had {
		s.record("faults", ActionFaultCleared, "Image", "", image, "containers no longer crash")
	}
	s.pokePodsAsync(func(p *corev1.Pod) bool { return podUsesImage(p, image) })
}

// SetNotRegistering makes the exporter process of the Exporter namespace/exporter fail to
// register although its Pod runs: the Exporter reports Registered=False and Online=False
// (exporterStatus Offline), as upstream shows an exporter that never connected. message is
// what the exporter would log; upstream cannot surface it (the process never reached the
// controller), so it is kept for [Simulator.NotRegisteringReason] and the event log only.
// Like the real failures (wrong endpoint, token or CA in the mounted config) it lasts until
// ClearNotRegistering, across Pods and Exporter re-creations under the same name.
func (s *Simulator) SetNotRegistering(namespace, exporter string, message string) {
	key := types.NamespacedName{Namespace: namespace, Name: exporter}
	s.faults.mu.Lock()
	s.faults.notRegistering[key] = message
	s.faults.mu.Unlock()
	s.record("faults", ActionFaultSet, "Exporter", namespace, exporter, "exporter cannot register: %s", message)
	s.pokeExporterAsync(key)
}

// ClearNotRegistering undoes SetNotRegistering: the exporter registers if nothing else
// stops it.
func (s *Simulator) ClearNotRegistering(namespace, exporter string) {
	key := types.NamespacedName{Namespace: namespace, Name: exporter}
	s.faults.mu.Lock()
	_, had := s.faults.notRegistering[key]
	delete(s.faults.notRegistering, key)
	s.faults.mu.Unlock()
	if had {
		s.record("faults", ActionFaultCleared, "Exporter", namespace, exporter, "exporter may register again")
	}
	s.pokeExporterAsync(key)
}

// SetPodStartDelay changes [WithPodStartDelay] at run time; Pods already waiting are
// measured against the new value.
func (s *Simulator) SetPodStartDelay(d time.Duration) {
	s.faults.startDelay.Store(int64(d))
	s.pokePodsAsync(func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodPending || p.Status.Phase == "" })
}

// SetRegistrationDelay changes [WithRegistrationDelay] at run time; exporters already
// waiting are measured against the new value.
func (s *Simulator) SetRegistrationDelay(d time.Duration) {
	s.faults.regDelay.Store(int64(d))
	s.pokeExportersAsync()
}

func (s *Simulator) podStartDelay() time.Duration {
	return time.Duration(s.faults.startDelay.Load())
}

func (s *Simulator) registrationDelay() time.Duration {
	return time.Duration(s.faults.regDelay.Load())
}

// podUsesImage reports whether any container of pod runs image.
func podUsesImage(pod *corev1.Pod, image string) bool {
	for _, c := range pod.Spec.InitContainers {
		if c.Image == image {
			return true
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Image == image {
			return true
		}
	}
	return false
}

// pokePodsAsync re-syncs the cached Pods for which match holds. It runs in the background:
// test hooks have no context, and a poke may wait for the work queue.
func (s *Simulator) pokePodsAsync(match func(*corev1.Pod) bool) {
	if !s.opts.kubelet {
		return
	}
	go func() {
		ctx, cancel := s.hookContext()
		defer cancel()
		var pods corev1.PodList
		if err := s.client.List(ctx, &pods); err != nil {
			return
		}
		for i := range pods.Items {
			if match(&pods.Items[i]) {
				p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pods.Items[i].Namespace, Name: pods.Items[i].Name}}
				s.poke(ctx, s.podPokes, p)
			}
		}
	}()
}

func (s *Simulator) pokeExporterAsync(key types.NamespacedName) {
	if !s.opts.controller {
		return
	}
	go func() {
		ctx, cancel := s.hookContext()
		defer cancel()
		s.poke(ctx, s.exporterPokes, &jsv1.Exporter{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}})
	}()
}

func (s *Simulator) pokeExportersAsync() {
	if !s.opts.controller {
		return
	}
	go func() {
		ctx, cancel := s.hookContext()
		defer cancel()
		var list jsv1.ExporterList
		if err := s.client.List(ctx, &list); err != nil {
			return
		}
		for i := range list.Items {
			e := &jsv1.Exporter{ObjectMeta: metav1.ObjectMeta{Namespace: list.Items[i].Namespace, Name: list.Items[i].Name}}
			s.poke(ctx, s.exporterPokes, e)
		}
	}()
}

// hookContext bounds the background work of a test hook: it ends with the Simulator.
func (s *Simulator) hookContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	go func() {
		select {
		case <-s.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
