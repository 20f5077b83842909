package jumpsim

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// Booking is a lease booked ahead, as a Jumpstarter client creates one: begin (and
// optionally end) time and a duration, any of which may be zero when the others fix it.
type Booking struct {
	// Selector matches the Exporters the lease may get.
	Selector map[string]string
	// Begin is spec.beginTime; zero leaves it unset.
	Begin time.Time
	// End is spec.endTime; zero leaves it unset.
	End time.Time
	// Duration is spec.duration; 0 leaves it unset.
	Duration time.Duration
}

// BookLease creates the Lease namespace/name from b, held by TestClientName.
func (s *Simulator) BookLease(ctx context.Context, namespace, name string, b Booking) (*jsv1.Lease, error) {
	l := &jsv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: jsv1.LeaseSpec{
			ClientRef: corev1.LocalObjectReference{Name: TestClientName},
			Selector:  metav1.LabelSelector{MatchLabels: b.Selector},
		},
	}
	if !b.Begin.IsZero() {
		l.Spec.BeginTime = &metav1.Time{Time: b.Begin}
	}
	if !b.End.IsZero() {
		l.Spec.EndTime = &metav1.Time{Time: b.End}
	}
	if b.Duration > 0 {
		l.Spec.Duration = &metav1.Duration{Duration: b.Duration}
	}
	if err := s.direct.Create(ctx, l); err != nil {
		return nil, err
	}
	return l, nil
}
