package pool_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// bookingSummary is what the booking table compares of a plan.
type bookingSummary struct {
	Wanted, Create  int32
	Retire          []string
	StartPods       []string
	Limited         bool
	Booked, Waiting []string
	RequeueAfter    time.Duration
}

func summarizeBookings(p pool.Plan) bookingSummary {
	var booked []string
	for _, b := range p.Booked {
		booked = append(booked, b.Name)
	}
	return bookingSummary{Wanted: p.Wanted, Create: p.Create, Retire: fixture.Names(p.Retire), StartPods: fixture.Names(p.StartPods),
		Limited: p.Limited, Booked: booked, Waiting: p.BookedWaiting, RequeueAfter: p.RequeueAfter}
}

// booked adds bookings beginning at now+in[i] (names b1, b2, ...) and a lead time.
func booked(in pool.PlanInput, lead time.Duration, begins ...time.Duration) pool.PlanInput {
	in.LeadTime = lead
	for i, d := range begins {
		in.Bookings = append(in.Bookings, pool.Booking{Name: "b" + string(rune('1'+i)), Begin: in.Now.Add(d)})
	}
	pool.SortBookings(in.Bookings)
	return in
}

func wffc(in pool.PlanInput) pool.PlanInput {
	in.Binding = vtv1alpha1.BindingWaitForFirstConsumer
	return in
}

func TestPlanScaleBookings(t *testing.T) {
	const lead = 10 * time.Second
	cases := []struct {
		name string
		in   pool.PlanInput
		want bookingSummary
	}{
		{
			name: "lead window: a booking further ahead than the lead wants nothing yet, and wakes the set when it falls due",
			in:   booked(input(0, 4, 1, fixture.Instance("a", fixture.Ready)), lead, 30*time.Second),
			want: bookingSummary{Wanted: 1, RequeueAfter: 20 * time.Second},
		},
		{
			name: "lead window: a booking within the lead wants an instance on top of the buffer",
			in:   booked(input(0, 4, 1, fixture.Instance("a", fixture.Ready)), lead, 8*time.Second),
			want: bookingSummary{Wanted: 2, Create: 1, Booked: []string{"b1"}},
		},
		{
			name: "lead window: exactly at the lead counts",
			in:   booked(input(0, 4, 1, fixture.Instance("a", fixture.Ready)), lead, lead),
			want: bookingSummary{Wanted: 2, Create: 1, Booked: []string{"b1"}},
		},
		{
			name: "a booking whose begin passed but which is not yet assigned still counts",
			in:   booked(input(0, 4, 1, fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.Ready)), lead, -time.Second),
			want: bookingSummary{Wanted: 2, Booked: []string{"b1"}},
		},
		{
			name: "three bookings at the same instant on a buffer of 1: three more instances",
			in:   booked(input(0, 8, 1, fixture.Instance("a", fixture.Ready)), lead, 5*time.Second, 5*time.Second, 5*time.Second),
			want: bookingSummary{Wanted: 4, Create: 3, Booked: []string{"b1", "b2", "b3"}},
		},
		{
			name: "only the due ones of several: the next wakes the set",
			in:   booked(input(0, 8, 0), lead, 5*time.Second, time.Minute, 25*time.Second),
			want: bookingSummary{Wanted: 1, Create: 1, Booked: []string{"b1"}, RequeueAfter: 15 * time.Second},
		},
		{
			name: "ceiling: bookings beyond maxReplicas are named as waiting, latest first to wait",
			in: booked(input(0, 3, 1, fixture.Instance("a", fixture.Ready, fixture.Leased("walk-in")), fixture.Instance("b", fixture.Ready)), lead,
				3*time.Second, 2*time.Second, 4*time.Second),
			// busy 1 + buffer 1 + 3 booked = 5 > 3; the ceiling leaves 2 instances for bookings
			// (the buffer may serve one when it begins), so the latest (b3) waits.
			want: bookingSummary{Wanted: 5, Create: 1, Limited: true, Booked: []string{"b2", "b1", "b3"}, Waiting: []string{"b3"}},
		},
		{
			name: "ceiling: waiting walk-in leases come before bookings",
			in: withDemand(booked(input(0, 2, 0, fixture.Instance("a", fixture.Ready, fixture.Leased("x"))), lead,
				time.Second), 1),
			want: bookingSummary{Wanted: 3, Create: 1, Limited: true, Booked: []string{"b1"}, Waiting: []string{"b1"}},
		},
		{
			name: "walk-in theft: the instance prepared for a booking was leased by a walk-in: prepare another",
			in:   booked(input(0, 4, 1, fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.Ready, fixture.Leased("walk-in"))), lead, 4*time.Second),
			want: bookingSummary{Wanted: 3, Create: 1, Booked: []string{"b1"}},
		},
		{
			name: "booking begun and assigned: its instance is busy, the buffer stays, nothing new",
			in:   input(0, 4, 1, fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.Ready, fixture.Leased("b1"))),
			want: bookingSummary{Wanted: 2},
		},
		{
			name: "cancelled booking: the instance prepared for it is surplus and waits for the cooldown",
			in:   input(0, 4, 1, fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.Ready)),
			want: bookingSummary{Wanted: 1, RequeueAfter: 5 * time.Minute},
		},
		{
			name: "booking moved later, out of the lead: same as cancelled until it falls due again",
			in:   booked(input(0, 4, 1, fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.Ready)), lead, time.Hour),
			want: bookingSummary{Wanted: 1, RequeueAfter: 5 * time.Minute},
		},
		{
			name: "WaitForFirstConsumer: a due booking starts a Pod for an existing Exporter",
			in:   wffc(booked(input(0, 4, 2, fixture.Instance("a"), fixture.Instance("b")), lead, 5*time.Second)),
			want: bookingSummary{Wanted: 3, Create: 1, Booked: []string{"b1"}, StartPods: []string{"a"}},
		},
		{
			name: "WaitForFirstConsumer: a booking not yet due starts no Pod",
			in:   wffc(booked(input(0, 4, 2, fixture.Instance("a"), fixture.Instance("b")), lead, 30*time.Second)),
			want: bookingSummary{Wanted: 2, RequeueAfter: 20 * time.Second},
		},
		{
			name: "WaitForFirstConsumer: a Pod already starting serves the booking",
			in:   wffc(booked(input(0, 4, 2, fixture.Instance("a"), fixture.Instance("b", fixture.Pod(corev1.PodPending)), fixture.Instance("c")), lead, 5*time.Second)),
			want: bookingSummary{Wanted: 3, Booked: []string{"b1"}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := summarizeBookings(pool.PlanScale(c.in))
			if d := cmp.Diff(c.want, got, cmpopts.EquateEmpty()); d != "" {
				t.Errorf("plan (-want +got):\n%s", d)
			}
		})
	}
}

// The plan's note says what the set prepares for.
func TestPlanBookingNote(t *testing.T) {
	in := booked(input(0, 8, 1, fixture.Instance("a", fixture.Ready)), 80*time.Second, 70*time.Second, 70*time.Second, 70*time.Second)
	in.Now = time.Date(2026, 1, 2, 1, 58, 50, 0, time.UTC)
	for i := range in.Bookings {
		in.Bookings[i].Begin = time.Date(2026, 1, 2, 2, 0, 0, 0, time.UTC)
	}
	got := pool.PlanScale(in).BookingNote
	want := "3 leases begin at 02:00:00; instances for them start from 01:58:40 (lead time 1m20s), 3 starting now"
	if got != want {
		t.Fatalf("note %q, want %q", got, want)
	}
	if got := pool.PlanScale(input(0, 8, 1, fixture.Instance("a", fixture.Ready))).BookingNote; got != "" {
		t.Fatalf("note without bookings: %q", got)
	}
}

func TestBookedFor(t *testing.T) {
	set := labels.Set{"board": "x86", pool.LabelSet: "s"}
	begin := metav1.NewTime(fixture.Epoch)
	mk := func(f func(l *jumpstarterv1alpha1.Lease)) *jumpstarterv1alpha1.Lease {
		l := &jumpstarterv1alpha1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l"}, Spec: jumpstarterv1alpha1.LeaseSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"board": "x86"}}, BeginTime: &begin}}
		if f != nil {
			f(l)
		}
		return l
	}
	cases := []struct {
		name string
		l    *jumpstarterv1alpha1.Lease
		want bool
	}{
		{"a booking", mk(nil), true},
		{"no begin time: a walk-in", mk(func(l *jumpstarterv1alpha1.Lease) { l.Spec.BeginTime = nil }), false},
		{"endTime - duration gives the begin", mk(func(l *jumpstarterv1alpha1.Lease) {
			l.Spec.BeginTime = nil
			l.Spec.EndTime = &metav1.Time{Time: fixture.Epoch.Add(time.Hour)}
			l.Spec.Duration = &metav1.Duration{Duration: time.Hour}
		}), true},
		{"started", mk(func(l *jumpstarterv1alpha1.Lease) { l.Status.ExporterRef = &corev1.LocalObjectReference{Name: "e"} }), false},
		{"ended", mk(func(l *jumpstarterv1alpha1.Lease) { l.Status.Ended = true }), false},
		{"released", mk(func(l *jumpstarterv1alpha1.Lease) { l.Spec.Release = true }), false},
		{"pinned by exporterRef", mk(func(l *jumpstarterv1alpha1.Lease) { l.Spec.ExporterRef = &corev1.LocalObjectReference{Name: "e"} }), false},
		{"selector does not match", mk(func(l *jumpstarterv1alpha1.Lease) { l.Spec.Selector.MatchLabels = map[string]string{"board": "arm"} }), false},
		{"begun and Pending: walk-in demand instead", mk(func(l *jumpstarterv1alpha1.Lease) {
			l.Status.Conditions = []metav1.Condition{{Type: jumpstarterv1alpha1.LeaseConditionPending, Status: metav1.ConditionTrue}}
		}), false},
	}
	for _, c := range cases {
		b, ok := pool.BookedFor(c.l, set)
		if ok != c.want {
			t.Errorf("%s: booked %v, want %v", c.name, ok, c.want)
		}
		if ok && (b.Name != "l" || !b.Begin.Equal(fixture.Epoch)) {
			t.Errorf("%s: booking %+v", c.name, b)
		}
	}
}
