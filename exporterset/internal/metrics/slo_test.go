package metrics

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/pool"
)

func lease(name string, created time.Duration) *jumpstarterv1alpha1.Lease {
	return &jumpstarterv1alpha1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: metav1.NewTime(fixture.Epoch.Add(created))}}
}

func assignedTo(l *jumpstarterv1alpha1.Lease, exporter string) *jumpstarterv1alpha1.Lease {
	c := l.DeepCopy()
	c.Status.ExporterRef = &corev1.LocalObjectReference{Name: exporter}
	return c
}

// metricSample finds the sample of family name whose labels include want.
func metricSample(t *testing.T, reg *prometheus.Registry, name string, want map[string]string) *dto.Metric {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue next
				}
			}
			return m
		}
	}
	return nil
}

func histogramOf(t *testing.T, reg *prometheus.Registry, name string) (count uint64, sum float64) {
	t.Helper()
	m := metricSample(t, reg, name, map[string]string{"namespace": "ns", "exporterset": "pool"})
	if m == nil {
		return 0, 0
	}
	return m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}

func counterOf(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	want := map[string]string{"namespace": "ns", "exporterset": "pool"}
	for k, v := range labels {
		want[k] = v
	}
	m := metricSample(t, reg, name, want)
	if m == nil {
		return 0
	}
	if m.Gauge != nil {
		return m.GetGauge().GetValue()
	}
	return m.GetCounter().GetValue()
}

// TestSLOMetricsFollowALeaseStory walks a pool through passes: a lease served warm, one
// that waited for a cold start, a booked lease served late, and one assigned before the
// controller started, which must not count.
func TestSLOMetricsFollowALeaseStory(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg, fixture.Epoch)
	m.start = fixture.Epoch.Add(time.Second) // a and z (created at epoch) predate the controller
	set := &Set{}
	pass := func(at time.Duration, instances []*pool.Instance, leases []*jumpstarterv1alpha1.Lease, waiting ...*jumpstarterv1alpha1.Lease) {
		m.ObserveSLO("ns", "pool", set, SLOInput{Now: fixture.Epoch.Add(at), Instances: instances, Leases: leases, Waiting: waiting,
			Binding: vtv1alpha1.BindingImmediate, Hash: "h2"})
	}
	old := lease("old", -10*time.Second) // assigned before the controller started
	l0, l1 := lease("l0", 16*time.Second), lease("l1", 15*time.Second)
	booked := lease("booked", time.Second)
	booked.Spec.BeginTime = ptr.To(metav1.NewTime(fixture.Epoch.Add(50 * time.Second)))

	// First pass: a is available (since before we looked), b is starting, z holds "old".
	pass(10*time.Second, []*pool.Instance{fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.CreatedAt(5*time.Second)), fixture.Instance("z", fixture.Ready, fixture.Leased("old"))},
		[]*jumpstarterv1alpha1.Lease{old})
	// l0 is assigned to a (the Lease's side is written first); l1 waits.
	pass(20*time.Second, []*pool.Instance{fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.CreatedAt(5*time.Second)), fixture.Instance("z", fixture.Ready, fixture.Leased("old"))},
		[]*jumpstarterv1alpha1.Lease{old, assignedTo(l0, "a"), l1}, l1)
	// b becomes available 25 s after its creation.
	pass(30*time.Second, []*pool.Instance{fixture.Instance("a", fixture.Ready, fixture.Leased("l0")), fixture.Instance("b", fixture.Ready, fixture.CreatedAt(5*time.Second)), fixture.Instance("z", fixture.Ready, fixture.Leased("old"))},
		[]*jumpstarterv1alpha1.Lease{old, assignedTo(l0, "a"), l1}, l1)
	// l1 is served by b, which was not available when l1 was created: a cold start.
	pass(40*time.Second, []*pool.Instance{fixture.Instance("a", fixture.Ready, fixture.Leased("l0")), fixture.Instance("b", fixture.Ready, fixture.CreatedAt(5*time.Second), fixture.Leased("l1")), fixture.Instance("c", fixture.Ready, fixture.CreatedAt(35*time.Second))},
		[]*jumpstarterv1alpha1.Lease{assignedTo(l0, "a"), assignedTo(l1, "b")})
	// the booked lease begins at 50 s and is seen assigned at 60 s.
	pass(60*time.Second, []*pool.Instance{fixture.Instance("a", fixture.Ready, fixture.Leased("l0")), fixture.Instance("b", fixture.Ready, fixture.CreatedAt(5*time.Second), fixture.Leased("l1")), fixture.Instance("c", fixture.Ready, fixture.CreatedAt(35*time.Second), fixture.Leased("booked"))},
		[]*jumpstarterv1alpha1.Lease{assignedTo(l0, "a"), assignedTo(l1, "b"), booked})

	if n, sum := histogramOf(t, reg, "exporterset_lease_wait_seconds"); n != 2 || sum != 4+25 {
		t.Errorf("lease wait: %d observations summing to %vs, want 2 (l0 4s, l1 25s) summing to 29s", n, sum)
	}
	if got := counterOf(t, reg, "exporterset_lease_assignments_total", map[string]string{"start": "warm"}); got != 2 {
		t.Errorf("warm assignments = %v, want 2 (l0 on a, booked on c)", got)
	}
	if got := counterOf(t, reg, "exporterset_lease_assignments_total", map[string]string{"start": "cold"}); got != 1 {
		t.Errorf("cold assignments = %v, want 1 (l1 on b)", got)
	}
	if n, sum := histogramOf(t, reg, "exporterset_booked_lease_delay_seconds"); n != 1 || sum != 10 {
		t.Errorf("booked delay: %d observations summing to %vs, want 1 of 10s", n, sum)
	}
	// b: 30-5 = 25 s; c: first seen available at 40 s, created at 35 s. a and z were
	// available before we looked: not timed.
	if n, sum := histogramOf(t, reg, "exporterset_instance_time_to_available_seconds"); n != 2 || sum != 25+5 {
		t.Errorf("time to available: %d observations summing to %vs, want 2 summing to 30s", n, sum)
	}
	if got := counterOf(t, reg, "exporterset_outdated_replicas", nil); got != 3 {
		t.Errorf("outdated replicas = %v, want 3 (every instance has hash h1, the set h2)", got)
	}

	// Memory goes with what it is about: the instances and leases of the last pass.
	pass(70*time.Second, nil, nil)
	mem := set.slo
	if n := len(mem.availableSince) + len(mem.untimed) + len(mem.timed) + len(mem.pendingSeen) + len(mem.assigned); n != 0 {
		t.Errorf("%d SLO memory entries left after everything went, want 0: %+v", n, mem)
	}
	m.Forget("ns", "pool")
	if metricSample(t, reg, "exporterset_lease_wait_seconds", nil) != nil {
		t.Error("forget left the set's SLO series behind")
	}
}

// TestTimeToAvailableUnderWaitForFirstConsumer times each Pod start, not the Exporter's
// creation: idle instances there have no Pod.
func TestTimeToAvailableUnderWaitForFirstConsumer(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := New(reg, fixture.Epoch)
	m.start = fixture.Epoch
	withPod := func(uid string, created time.Duration, readyToo bool) *pool.Instance {
		in := fixture.Instance("a")
		if readyToo {
			fixture.Online(in)
			fixture.Registered(in)
		}
		in.Pods = []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "a-" + uid, UID: types.UID("pod-" + uid), CreationTimestamp: metav1.NewTime(fixture.Epoch.Add(created))},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}}
		return in
	}
	set := &Set{}
	pass := func(at time.Duration, in *pool.Instance) {
		m.ObserveSLO("ns", "pool", set, SLOInput{Now: fixture.Epoch.Add(at), Instances: []*pool.Instance{in}, Binding: vtv1alpha1.BindingWaitForFirstConsumer})
	}
	pass(10*time.Second, fixture.Instance("a"))               // idle: no Pod, nothing to time
	pass(20*time.Second, withPod("1", 18*time.Second, false)) // a lease waits: a Pod starts
	pass(26*time.Second, withPod("1", 18*time.Second, true))  // available 8 s after the Pod's creation
	if n, sum := histogramOf(t, reg, "exporterset_instance_time_to_available_seconds"); n != 1 || sum != 8 {
		t.Errorf("time to available: %d observations summing to %vs, want one of 8s (from the Pod, not the Exporter)", n, sum)
	}
}
