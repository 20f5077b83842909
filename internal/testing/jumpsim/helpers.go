package jumpsim

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// TestClientName is the spec.clientRef of leases made by TakeLease.
const TestClientName = "test-client"

// pollInterval is how often the Wait helpers look; the apiserver is local.
const pollInterval = 20 * time.Millisecond

// TakeLease creates the Lease namespace/name for an Exporter matching selector, held by
// TestClientName for duration (0: until released), as a Jumpstarter client requesting one.
func (s *Simulator) TakeLease(ctx context.Context, namespace, name string, selector map[string]string, duration time.Duration) (*jsv1.Lease, error) {
	l := &jsv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: jsv1.LeaseSpec{
			ClientRef: corev1.LocalObjectReference{Name: TestClientName},
			Selector:  metav1.LabelSelector{MatchLabels: selector},
		},
	}
	if duration > 0 {
		l.Spec.Duration = &metav1.Duration{Duration: duration}
	}
	if err := s.direct.Create(ctx, l); err != nil {
		return nil, err
	}
	return l, nil
}

// ReleaseLease sets spec.release on the Lease namespace/name, as a client ending it early.
func (s *Simulator) ReleaseLease(ctx context.Context, namespace, name string) error {
	l := &jsv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	return s.direct.Patch(ctx, l, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"release":true}}`)))
}

// WaitLeaseAssigned waits until the Lease namespace/name has an exporter and returns it. It
// fails at once if the lease ends unassigned (Unsatisfiable, Invalid, released, expired).
func (s *Simulator) WaitLeaseAssigned(ctx context.Context, namespace, name string) (*jsv1.Lease, error) {
	return s.waitLease(ctx, namespace, name, func(l *jsv1.Lease) (bool, error) {
		if l.Status.ExporterRef != nil {
			return true, nil
		}
		if l.Status.Ended {
			return false, fmt.Errorf("jumpsim: lease %s/%s ended without an exporter: %s", namespace, name, describeConditions(l.Status.Conditions))
		}
		return false, nil
	})
}

// WaitLeaseEnded waits until the Lease namespace/name has ended and returns it.
func (s *Simulator) WaitLeaseEnded(ctx context.Context, namespace, name string) (*jsv1.Lease, error) {
	return s.waitLease(ctx, namespace, name, func(l *jsv1.Lease) (bool, error) { return l.Status.Ended, nil })
}

// WaitLeasePending waits until the Lease namespace/name is waiting (not ended, unassigned,
// Pending=True) for reason, or for any reason when reason is empty, and returns it.
func (s *Simulator) WaitLeasePending(ctx context.Context, namespace, name, reason string) (*jsv1.Lease, error) {
	return s.waitLease(ctx, namespace, name, func(l *jsv1.Lease) (bool, error) {
		if l.Status.Ended || l.Status.ExporterRef != nil {
			return false, fmt.Errorf("jumpsim: lease %s/%s is no longer waiting: %s", namespace, name, describeConditions(l.Status.Conditions))
		}
		c := meta.FindStatusCondition(l.Status.Conditions, jsv1.LeaseConditionPending)
		return c != nil && c.Status == metav1.ConditionTrue && (reason == "" || c.Reason == reason), nil
	})
}

func (s *Simulator) waitLease(ctx context.Context, namespace, name string, done func(*jsv1.Lease) (bool, error)) (*jsv1.Lease, error) {
	var l jsv1.Lease
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		l = jsv1.Lease{}
		if err := s.direct.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &l); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return done(&l)
	})
	if err != nil {
		return &l, fmt.Errorf("waiting for lease %s/%s (%s): %w", namespace, name, describeConditions(l.Status.Conditions), err)
	}
	return &l, nil
}

// WaitExporterReady waits until the Exporter namespace/name is Registered and Online, the
// state in which the lease scheduler may assign it, and returns it.
func (s *Simulator) WaitExporterReady(ctx context.Context, namespace, name string) (*jsv1.Exporter, error) {
	return s.WaitExporter(ctx, namespace, name, ExporterReady)
}

// WaitExporter waits until cond holds for the Exporter namespace/name and returns it.
func (s *Simulator) WaitExporter(ctx context.Context, namespace, name string, cond func(*jsv1.Exporter) bool) (*jsv1.Exporter, error) {
	var ex jsv1.Exporter
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		ex = jsv1.Exporter{}
		if err := s.direct.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &ex); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return cond(&ex), nil
	})
	if err != nil {
		return &ex, fmt.Errorf("waiting for exporter %s/%s (%s, exporterStatus %q): %w", namespace, name, describeConditions(ex.Status.Conditions), ex.Status.ExporterStatusValue, err)
	}
	return &ex, nil
}

// ExporterReady reports whether ex is Registered and Online.
func ExporterReady(ex *jsv1.Exporter) bool {
	return meta.IsStatusConditionTrue(ex.Status.Conditions, jsv1.ExporterConditionRegistered) &&
		meta.IsStatusConditionTrue(ex.Status.Conditions, jsv1.ExporterConditionOnline)
}

// WaitPodPhase waits until the Pod namespace/name is in phase and returns it.
func (s *Simulator) WaitPodPhase(ctx context.Context, namespace, name string, phase corev1.PodPhase) (*corev1.Pod, error) {
	var pod corev1.Pod
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		pod = corev1.Pod{}
		if err := s.direct.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &pod); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return pod.Status.Phase == phase, nil
	})
	if err != nil {
		return &pod, fmt.Errorf("waiting for pod %s/%s to be %s (is %q): %w", namespace, name, phase, pod.Status.Phase, err)
	}
	return &pod, nil
}

// WaitGone waits until obj (its namespace and name) no longer exists.
func (s *Simulator) WaitGone(ctx context.Context, obj client.Object) error {
	key := client.ObjectKeyFromObject(obj)
	probe := obj.DeepCopyObject().(client.Object)
	err := wait.PollUntilContextCancel(ctx, pollInterval, true, func(ctx context.Context) (bool, error) {
		resetObject(probe)
		err := s.direct.Get(ctx, key, probe)
		if err != nil {
			return client.IgnoreNotFound(err) == nil, client.IgnoreNotFound(err)
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s %s to go: %w", typeName(obj), key, err)
	}
	return nil
}

func describeConditions(conds []metav1.Condition) string {
	if len(conds) == 0 {
		return "no conditions"
	}
	out := ""
	for i, c := range conds {
		if i > 0 {
			out += ", "
		}
		out += fmt.Sprintf("%s=%s (%s)", c.Type, c.Status, c.Reason)
	}
	return out
}
