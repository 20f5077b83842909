package jumpsim

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// LeaseEndFunc tells the real exporter process in container of pod that its lease ended, as
// the Jumpstarter controller does over its gRPC stream; an exporter whose config says
// exitOnLeaseEnd then exits. The real-node tier runs it as an exec in the container.
type LeaseEndFunc func(ctx context.Context, pod *corev1.Pod, container string) error

// WithRealNode runs the Simulator beside a real kubelet, scheduler and garbage collector:
// only the Jumpstarter core is simulated (credentials, presence, lease scheduling). The
// simulated kubelet, scheduler and collector are off, an exporter is Online only while the
// real kubelet reports its container Ready, and when a lease ends leaseEnd tells the
// exporter process of the Pod, once per Pod and lease.
func WithRealNode(leaseEnd LeaseEndFunc) Option {
	return func(o *options) {
		o.kubelet, o.gc = false, false
		o.realNode = true
		o.leaseEnd = leaseEnd
	}
}

// leaseEnds remembers which (Pod, Lease) pairs were told, so each is told once.
type leaseEnds struct {
	mu   sync.Mutex
	told map[string]bool
}

// tellLeaseEnded runs the LeaseEndFunc for pod's exporter after lease l, in the background
// and once; a failure is recorded as an event and tried again on the next look.
func (s *Simulator) tellLeaseEnded(ctx context.Context, pod *corev1.Pod, container string, l *jsv1.Lease) {
	if s.opts.leaseEnd == nil {
		return
	}
	key := string(pod.UID) + "/" + string(l.UID)
	s.ends.mu.Lock()
	if s.ends.told[key] {
		s.ends.mu.Unlock()
		return
	}
	s.ends.told[key] = true
	s.ends.mu.Unlock()
	p := pod.DeepCopy()
	go func() {
		if err := s.opts.leaseEnd(ctx, p, container); err != nil {
			s.ends.mu.Lock()
			delete(s.ends.told, key)
			s.ends.mu.Unlock()
			s.events.add(Event{Time: time.Now(), Component: "presence", Action: ActionError, Kind: "Pod",
				Namespace: p.Namespace, Name: p.Name, Detail: fmt.Sprintf("telling the exporter lease %s ended: %v", l.Name, err)})
		}
	}()
}

// containerReady reports whether the real kubelet says container of pod is Ready.
func containerReady(pod *corev1.Pod, container string) bool {
	cs, ok := statusOf(pod.Status.ContainerStatuses, container)
	return ok && cs.Ready && cs.State.Running != nil
}
