package exporterset_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/internal/testing/jumpsim"
)

// book creates a Lease for board booked to begin at begin, for an hour.
func (w *world) book(name, board string, begin time.Time) *jumpstarterv1alpha1.Lease {
	l := &jumpstarterv1alpha1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns},
		Spec: jumpstarterv1alpha1.LeaseSpec{
			ClientRef: corev1.LocalObjectReference{Name: "test-client"},
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"board": board}},
			BeginTime: &metav1.Time{Time: begin},
			Duration:  &metav1.Duration{Duration: time.Hour},
		}}
	w.create(l)
	return l
}

// bootDelay is how long the simulated targets take to start: a reactive pool is a whole
// boot late for a lease it did not see coming.
const bootDelay = 4 * time.Second

// Three leases booked for the same instant on a pool with a buffer of 1 and targets that
// take 4 s to boot (start-up seen once, by the buffer's instance). The set starts nothing for
// them while their begin time is further ahead than the learned lead, and has an instance
// ready for each when they begin: every lease gets an exporter that was online before its
// begin time, so none waits for a boot.
func TestBookingsReadyAtBeginTime(t *testing.T) {
	w := newWorld(t, jumpsim.WithPodStartDelay(bootDelay))
	w.class("fake")
	w.controller(env.Config)
	w.set("pool", 0, 8, 1)
	w.waitStatus("pool", 60*time.Second, "the buffer of 1 available", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas == 1 })

	begin := time.Now().Add(30 * time.Second).Truncate(time.Second)
	var leases []*jumpstarterv1alpha1.Lease
	for i := range 3 {
		leases = append(leases, w.book(fmt.Sprint("nightly-", i), "pool", begin))
	}
	booked := time.Now()

	// Nothing new for the bookings in the first 15 s of their wait: the learned lead (about
	// a boot plus its margin) is well below it.
	quiet := booked.Add(15 * time.Second)
	for time.Now().Before(quiet) {
		if n := len(w.exporters("pool")); n != 1 {
			t.Fatalf("%d instances %s before the bookings begin; want only the buffer until the lead time", n, time.Until(begin).Round(time.Second))
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Before the begin time the set says what it prepares for.
	st := w.waitStatus("pool", time.Until(begin), "the bookings in ScalingLimited", func(s vtv1alpha1.ExporterSetStatus) bool {
		c := apimeta.FindStatusCondition(s.Conditions, vtv1alpha1.ConditionScalingLimited)
		return c != nil && strings.Contains(c.Message, "3 leases begin at "+begin.UTC().Format(time.TimeOnly))
	})
	t.Logf("ScalingLimited: %s", apimeta.FindStatusCondition(st.Conditions, vtv1alpha1.ConditionScalingLimited).Message)

	// Each lease gets an instance that was online before its begin time.
	assignedAt := map[string]time.Duration{}
	w.eventually(time.Until(begin)+30*time.Second, "every booking assigned", func() string {
		for _, l := range leases {
			if _, ok := assignedAt[l.Name]; ok {
				continue
			}
			if err := w.c.Get(w.ctx, client.ObjectKeyFromObject(l), l); err != nil {
				return err.Error()
			}
			if l.Status.ExporterRef == nil {
				return l.Name + " not assigned"
			}
			assignedAt[l.Name] = time.Since(begin)
		}
		return ""
	})
	// What preparing cost: instance-seconds held idle before the begin time by the instances
	// created for the bookings (a buffer sized for the peak would hold 3 more all day).
	var held, idle time.Duration
	for _, e := range w.exporters("pool") {
		if e.CreationTimestamp.Time.After(booked) {
			online := apimeta.FindStatusCondition(e.Status.Conditions, jumpstarterv1alpha1.ExporterConditionOnline)
			if online == nil {
				t.Errorf("instance %s created for the bookings is not online", e.Name)
				continue
			}
			t.Logf("instance %s created %s before the begin time, online %s before it", e.Name, begin.Sub(e.CreationTimestamp.Time), begin.Sub(online.LastTransitionTime.Time))
			held += begin.Sub(e.CreationTimestamp.Time)
			idle += begin.Sub(online.LastTransitionTime.Time)
		}
	}
	t.Logf("instance-seconds before the begin time: %.0f from creation, %.0f online and idle (whole seconds)", held.Seconds(), idle.Seconds())
	for _, l := range leases {
		t.Logf("%s assigned %s after its begin time (seen by polling)", l.Name, assignedAt[l.Name].Round(10*time.Millisecond))
		if l.Status.BeginTime.Time.Before(begin) {
			t.Errorf("%s began at %v, before its begin time %v", l.Name, l.Status.BeginTime, begin)
		}
		ex := getExporter(t, w, l.Status.ExporterRef.Name)
		online := apimeta.FindStatusCondition(ex.Status.Conditions, jumpstarterv1alpha1.ExporterConditionOnline)
		if online == nil || online.LastTransitionTime.After(begin) {
			t.Errorf("%s got %s, online since %v: after the begin time %v (a cold start)", l.Name, ex.Name, online, begin)
		}
	}
}

// The scale subresource (kubectl scale, KEDA) sets spec.maxReplicas; bookings stay within it,
// and those it leaves without an instance are named in ScalingLimited.
func TestScaleSubresourceBoundsBookings(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	set := w.set("pool", 0, 4, 0, func(s *vtv1alpha1.ExporterSet) {
		s.Annotations = map[string]string{exporterset.AnnotationBookingLeadTime: "2h"}
	})
	begin := time.Now().Add(time.Hour).Truncate(time.Second)
	for i := range 3 {
		w.book(fmt.Sprint("b", i), "pool", begin.Add(time.Duration(i)*time.Second))
	}
	w.waitStatus("pool", 30*time.Second, "an instance per booking within the 2h lead", func(s vtv1alpha1.ExporterSetStatus) bool {
		return s.AvailableReplicas == 3
	})

	scale := &autoscalingv1.Scale{}
	if err := w.c.SubResource("scale").Get(w.ctx, set, scale); err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 2
	if err := w.c.SubResource("scale").Update(w.ctx, set, client.WithSubResourceBody(scale)); err != nil {
		t.Fatal(err)
	}
	if got := w.getSet("pool").Spec.MaxReplicas; got == nil || *got != 2 {
		t.Fatalf("the scale subresource set spec.maxReplicas to %v, want 2", got)
	}
	st := w.waitStatus("pool", 30*time.Second, "ScalingLimited naming the booking that will wait", func(s vtv1alpha1.ExporterSetStatus) bool {
		c := apimeta.FindStatusCondition(s.Conditions, vtv1alpha1.ConditionScalingLimited)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "maxReplicas leaves b2 waiting") && s.Replicas == 2
	})
	if st.Replicas > 2 {
		t.Fatalf("%d replicas above the scaled ceiling", st.Replicas)
	}
	// Scaled back up, the waiting booking gets its instance again.
	w.edit(set, func() { set.Spec.MaxReplicas = ptrInt32(4) })
	w.waitStatus("pool", 30*time.Second, "3 instances again", func(s vtv1alpha1.ExporterSetStatus) bool {
		c := apimeta.FindStatusCondition(s.Conditions, vtv1alpha1.ConditionScalingLimited)
		return s.AvailableReplicas == 3 && c != nil && c.Status == metav1.ConditionFalse
	})
}

func ptrInt32(v int32) *int32 { return &v }

// WaitForFirstConsumer: the Exporters exist, and a booking starts a Pod for one of them just
// in time (the lead learned from one Pod start), not when it is booked.
func TestBookingsStartPodsJustInTime(t *testing.T) {
	w := newWorld(t, jumpsim.WithPodStartDelay(bootDelay))
	w.class("fake", func(c *vtv1alpha1.VirtualTargetClass) { c.Spec.BindingMode = vtv1alpha1.BindingWaitForFirstConsumer })
	w.controller(env.Config)
	w.set("pool", 3, 6, 0)
	w.waitStatus("pool", 30*time.Second, "3 exporters", func(s vtv1alpha1.ExporterSetStatus) bool { return s.Replicas == 3 })
	// One Pod start, measured.
	warm := w.lease("warm-up", "pool")
	w.waitAssigned(warm)
	w.release(warm)

	begin := time.Now().Add(30 * time.Second).Truncate(time.Second)
	leases := []*jumpstarterv1alpha1.Lease{w.book("ci-0", "pool", begin), w.book("ci-1", "pool", begin)}
	booked := time.Now()
	podsSince := func() int {
		var pods corev1.PodList
		if err := w.c.List(w.ctx, &pods, client.InNamespace(w.ns), client.MatchingLabels{pool.LabelSet: "pool"}); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range pods.Items {
			if p.CreationTimestamp.Time.After(booked) {
				n++
			}
		}
		return n
	}
	for time.Now().Before(booked.Add(15 * time.Second)) {
		if n := podsSince(); n > 0 {
			t.Fatalf("%d Pods started %s before the bookings begin; want none until the lead time", n, time.Until(begin).Round(time.Second))
		}
		time.Sleep(200 * time.Millisecond)
	}
	for _, l := range leases {
		w.waitAssigned(l)
		if l.Status.BeginTime.Time.Before(begin) {
			t.Errorf("%s began at %v, before its begin time %v", l.Name, l.Status.BeginTime, begin)
		}
		ex := getExporter(t, w, l.Status.ExporterRef.Name)
		online := apimeta.FindStatusCondition(ex.Status.Conditions, jumpstarterv1alpha1.ExporterConditionOnline)
		if online == nil || online.LastTransitionTime.After(begin) {
			t.Errorf("%s got %s, online since %v: after the begin time %v (a cold start)", l.Name, ex.Name, online, begin)
		}
	}
	t.Logf("Pods started for the bookings: %d", podsSince())
}
