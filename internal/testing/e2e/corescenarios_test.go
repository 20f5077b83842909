//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/testproc"
)

// createPool creates a small class and set in ns (changed by change first) and waits for the
// set to be Available.
func createPool(t *testing.T, ns, board string, change func(*vtv1alpha1.ExporterSet)) *vtv1alpha1.ExporterSet {
	t.Helper()
	cls, set := smallPool(ns, board)
	if change != nil {
		change(set)
	}
	for _, o := range []client.Object{cls, set} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	return set
}

// waitAvailable waits for the set's Available=True.
func waitAvailable(t *testing.T, ns, name string) {
	t.Helper()
	testproc.WaitFor(t, 3*time.Minute, "set "+name+" Available", func() (bool, string) {
		s := getSet(t, ns, name)
		a := condition(s, string(vtv1alpha1.ConditionAvailable))
		return a.Status == metav1.ConditionTrue, fmt.Sprintf("Available=%s %s: %s; pods:%s", a.Status, a.Reason, a.Message, describePods(podsOf(t, ns)))
	})
}

// runningPods maps each running Pod of ns to its UID.
func runningPods(t *testing.T, ns string) map[string]types.UID {
	t.Helper()
	out := map[string]types.UID{}
	for _, p := range podsOf(t, ns) {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			out[p.Name] = p.UID
		}
	}
	return out
}

// exporterState is Pod name's UID and its exporter container's restart count and whether it runs.
func exporterState(t *testing.T, ns, name string) (types.UID, int32, bool) {
	t.Helper()
	var p corev1.Pod
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &p); err != nil {
		t.Fatal(err)
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == "exporter" {
			return p.UID, cs.RestartCount, cs.State.Running != nil
		}
	}
	return p.UID, 0, false
}

// podOf is the name of the running Pod the Exporter named controls.
func podOf(t *testing.T, ns, exporter string) string {
	t.Helper()
	for _, p := range podsOf(t, ns) {
		if controllerName(&p) == exporter && p.Status.Phase == corev1.PodRunning {
			return p.Name
		}
	}
	t.Fatalf("no running Pod of Exporter %s:%s", exporter, describePods(podsOf(t, ns)))
	return ""
}

// Upstream's controller is killed while a lease is held and started again: the exporters
// reconnect and register again, no instance is replaced, and the lease is kept and ends
// normally (its exporter exits, ExitAndReplace, and a replacement becomes available).
func TestCoreRestartMidLease(t *testing.T) {
	deployController(t)
	ns := newNamespace(t, "restart")
	c := startCore(t, ns)
	rec := recordTransitions(t, ns)
	set := createPool(t, ns, "restart", nil)
	waitAvailable(t, ns, set.Name)
	l := takeLease(t, ns, set.Spec.Selector.MatchLabels)
	leased := l.Status.ExporterRef.Name
	waitExporterStatus(t, ns, leased, jsv1.ExporterStatusLeaseReady)
	// The buffer refilled: a leased and an available exporter are connected when the core dies.
	testproc.WaitFor(t, 3*time.Minute, "the warm buffer refilled beside the lease", func() (bool, string) {
		s := getSet(t, ns, set.Name)
		return s.Status.AvailableReplicas >= 1 && s.Status.LeasedReplicas == 1, fmt.Sprintf("%+v", s.Status)
	})
	before := runningPods(t, ns)
	exporters := map[string]int{}
	for _, p := range podsOf(t, ns) {
		if before[p.Name] != "" {
			exporters[controllerName(&p)] = c.Count(`"Registering exporter"`, `"name":"`+controllerName(&p)+`"`)
		}
	}

	c.Kill()
	t.Logf("killed upstream's controller with lease %s on %s; Pods %v", l.Name, leased, before)
	time.Sleep(3 * time.Second)
	if err := c.Restart(); err != nil {
		t.Fatal(err)
	}
	testproc.WaitFor(t, time.Minute, "every exporter to register again", func() (bool, string) {
		var missing []string
		for e, n := range exporters {
			if c.Count(`"Registering exporter"`, `"name":"`+e+`"`) <= n {
				missing = append(missing, e)
			}
		}
		return len(missing) == 0, fmt.Sprintf("not registered again: %v", missing)
	})
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(l), l); err != nil {
		t.Fatal(err)
	}
	if l.Status.Ended || l.Status.ExporterRef == nil || l.Status.ExporterRef.Name != leased {
		t.Fatalf("lease after the restart: %+v, want still held by %s", l.Status, leased)
	}
	waitExporterStatus(t, ns, leased, jsv1.ExporterStatusLeaseReady)
	for name, uid := range before {
		if got, restarts, running := exporterState(t, ns, name); got != uid || restarts != 0 || !running {
			t.Errorf("Pod %s: uid %s (was %s), exporter restarts %d, running %v: want the same Pod, untouched", name, got, uid, restarts, running)
		}
	}
	releaseLease(t, l)
	// The lease ends, its exporter exits (ExitAndReplace) and is deleted, which takes the
	// Lease with it (upstream makes the Exporter its owner): the recording keeps its end.
	testproc.WaitFor(t, 3*time.Minute, "the lease to end, "+leased+" to go and the pool to be Available", func() (bool, string) {
		var e jsv1.Exporter
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: leased}, &e)
		s := getSet(t, ns, set.Name)
		a := condition(s, string(vtv1alpha1.ConditionAvailable))
		return apierrors.IsNotFound(err) && a.Status == metav1.ConditionTrue,
			fmt.Sprintf("exporter: %v; Available=%s; pods:%s", err, a.Status, describePods(podsOf(t, ns)))
	})
	if got := rec.Of("Lease " + l.Name); !strings.Contains(got, `Ready=False/Released/`) || !strings.Contains(got, "ended true") {
		t.Errorf("the lease did not end as released:\n%s", got)
	}
	t.Logf("FIDELITY lease across the core's restart:\n%s", rec.Of("Lease "+l.Name))
	logCore(t, c)
}

// A lease booked about 40 s ahead (spec.beginTime) on a pool with no warm buffer: the set
// prepares an instance for it, which is Registered and Online before the begin time, and
// upstream's scheduler assigns the lease to it once the begin time has come.
func TestBookedLeaseOnRealCore(t *testing.T) {
	deployController(t)
	ns := newNamespace(t, "booked")
	c := startCore(t, ns)
	set := createPool(t, ns, "booked", func(s *vtv1alpha1.ExporterSet) { s.Spec.MinAvailableReplicas = 0 })
	begin := metav1.NewTime(time.Now().Add(40 * time.Second).Truncate(time.Second))
	l := &jsv1.Lease{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-booked-", Namespace: ns},
		Spec: jsv1.LeaseSpec{ClientRef: corev1.LocalObjectReference{Name: "e2e"},
			Selector: set.Spec.Selector, BeginTime: &begin, Duration: &metav1.Duration{Duration: 10 * time.Minute}},
	}
	if err := env.Client.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	var readyAt time.Time
	testproc.WaitFor(t, 2*time.Minute, "the booked lease to be assigned", func() (bool, string) {
		if readyAt.IsZero() && getSet(t, ns, set.Name).Status.AvailableReplicas >= 1 {
			readyAt = time.Now()
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(l), l); err != nil {
			return false, err.Error()
		}
		return l.Status.ExporterRef != nil, fmt.Sprintf("lease %+v; pods:%s", l.Status, describePods(podsOf(t, ns)))
	})
	if readyAt.IsZero() || !readyAt.Before(begin.Time) {
		t.Errorf("an instance was available at %v, want before the begin time %v", readyAt, begin.Time)
	}
	var e jsv1.Exporter
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: l.Status.ExporterRef.Name}, &e); err != nil {
		t.Fatal(err)
	}
	reg := apimeta.FindStatusCondition(e.Status.Conditions, "Registered")
	if reg == nil || reg.Status != metav1.ConditionTrue || !reg.LastTransitionTime.Time.Before(begin.Time) {
		t.Errorf("assigned Exporter %s Registered %+v, want True since before %v", e.Name, reg, begin.Time)
	}
	if l.Status.BeginTime == nil || l.Status.BeginTime.Time.Before(begin.Time) {
		t.Errorf("lease began at %v, want not before its spec.beginTime %v", l.Status.BeginTime, begin.Time)
	}
	t.Logf("booked for %s: instance available %s ahead; assigned %s at %s", begin.Format(time.TimeOnly),
		begin.Sub(readyAt).Round(100*time.Millisecond), e.Name, l.Status.BeginTime.Format(time.TimeOnly))
	waitExporterStatus(t, ns, e.Name, jsv1.ExporterStatusLeaseReady)
	releaseLease(t, l)
	logCore(t, c)
}

// InPlaceReuse: after a lease ends, the same exporter process in the same Pod reports
// Available again and serves the next lease (the set is capped at one instance, so only it
// can).
func TestInPlaceReuseOnRealCore(t *testing.T) {
	deployController(t)
	ns := newNamespace(t, "reuse")
	c := startCore(t, ns)
	set := createPool(t, ns, "reuse", func(s *vtv1alpha1.ExporterSet) {
		s.Spec.RecycleStrategy = vtv1alpha1.RecycleInPlaceReuse
		s.Spec.MaxReplicas = ptr.To[int32](1)
	})
	waitAvailable(t, ns, set.Name)
	first := takeLease(t, ns, set.Spec.Selector.MatchLabels)
	exporter := first.Status.ExporterRef.Name
	pod := podOf(t, ns, exporter)
	uid, _, _ := exporterState(t, ns, pod)
	waitExporterStatus(t, ns, exporter, jsv1.ExporterStatusLeaseReady)
	releaseLease(t, first)
	waitExporterStatus(t, ns, exporter, jsv1.ExporterStatusAvailable)
	second := takeLease(t, ns, set.Spec.Selector.MatchLabels)
	if second.Status.ExporterRef.Name != exporter {
		t.Errorf("second lease on %s, want %s again", second.Status.ExporterRef.Name, exporter)
	}
	waitExporterStatus(t, ns, exporter, jsv1.ExporterStatusLeaseReady)
	if got, restarts, running := exporterState(t, ns, pod); got != uid || restarts != 0 || !running {
		t.Errorf("Pod %s: uid %s (was %s), exporter restarts %d, running %v: want the same process", pod, got, uid, restarts, running)
	}
	t.Logf("leases %s and %s both served by %s in Pod %s", first.Name, second.Name, exporter, pod)
	releaseLease(t, second)
	logCore(t, c)
}
