package exporterset_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/internal/testing/jumpsim"
	"github.com/exporterset/exporterset/internal/tuning"
)

// Failure tests: each kubelet or scheduler failure the simulator can produce, against a real
// API server: reported with its own reason, the kubelet's words, an event; Available tells
// the truth; churn is bounded; the pool recovers once the cause is fixed.

const badRuntime = "registry.example/runtime:broken"

// fastFailures makes the simulated kubelet retry pulls and restarts quickly, so tests see
// back-off states and recoveries within seconds.
func fastFailures() []jumpsim.Option {
	return []jumpsim.Option{jumpsim.WithImagePullBackOff(300 * time.Millisecond), jumpsim.WithCrashLoopBackOff(200*time.Millisecond, time.Second)}
}

func availableCond(st vtv1alpha1.ExporterSetStatus) *metav1.Condition {
	return apimeta.FindStatusCondition(st.Conditions, vtv1alpha1.ConditionAvailable)
}

// waitFailure waits until Degraded and (when wantAvailableFalse) Available both show reason.
func (w *world) waitFailure(set string, reason vtv1alpha1.ConditionReason, timeout time.Duration) vtv1alpha1.ExporterSetStatus {
	w.t.Helper()
	return w.waitStatus(set, timeout, "Degraded and Available "+string(reason), func(s vtv1alpha1.ExporterSetStatus) bool {
		r, _ := degraded(s)
		a := availableCond(s)
		return r == reason && a != nil && a.Status == metav1.ConditionFalse && a.Reason == string(reason)
	})
}

func (w *world) waitHealthy(set string, available int32, timeout time.Duration) vtv1alpha1.ExporterSetStatus {
	w.t.Helper()
	return w.waitStatus(set, timeout, fmt.Sprintf("healthy with %d available", available), func(s vtv1alpha1.ExporterSetStatus) bool {
		r, _ := degraded(s)
		a := availableCond(s)
		return s.AvailableReplicas >= available && r == "" && s.FailingReplicas == 0 && a != nil && a.Status == metav1.ConditionTrue
	})
}

func runtimeImage(image string) func(*vtv1alpha1.VirtualTargetClass) {
	return func(c *vtv1alpha1.VirtualTargetClass) {
		c.Spec.Images = &vtv1alpha1.Images{Runtime: &vtv1alpha1.ImageSpec{Image: image, ImagePullPolicy: corev1.PullIfNotPresent}}
	}
}

func sidecarLayout(c *vtv1alpha1.VirtualTargetClass) {
	c.Spec.Parameters = &apiextensionsv1.JSON{Raw: []byte(`{"sidecar":true}`)}
}

func mustContain(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(s, want) {
			t.Errorf("%s %q lacks %q", what, s, want)
		}
	}
}

// An image that cannot be pulled: ImagePullFailed with the kubelet's message, the instance,
// container and image named; one Warning event; recovery as soon as the registry has it.
func TestImagePullFailure(t *testing.T) {
	w := newWorld(t, fastFailures()...)
	w.sim.SetImagePullError(badRuntime, "")
	w.class("fake", runtimeImage(badRuntime))
	reg := prometheus.NewRegistry()
	w.controller(env.Config, exporterset.WithMetrics(reg))
	w.set("pool", 0, 4, 1)

	st := w.waitFailure("pool", vtv1alpha1.ReasonImagePullFailed, 30*time.Second)
	failures := `
# HELP exporterset_instance_failures_total Instance failures seen, by reason (ImagePullFailed, TargetCrashing, Unschedulable, ...): each instance counts once per reason it shows.
# TYPE exporterset_instance_failures_total counter
`
	// Every reason is exported from the first pass, at zero until it happens.
	reasons := pool.FailureReasons()
	slices.Sort(reasons)
	for _, r := range reasons {
		n := 0
		if r == vtv1alpha1.ReasonImagePullFailed {
			n = 1
		}
		failures += fmt.Sprintf("exporterset_instance_failures_total{exporterset=\"pool\",namespace=%q,reason=%q} %d\n", w.ns, r, n)
	}
	if err := testutil.GatherAndCompare(reg, strings.NewReader(failures), "exporterset_instance_failures_total"); err != nil {
		t.Error(err)
	}
	_, msg := degraded(st)
	mustContain(t, "Degraded message", msg, "1 of 1 instances cannot pull an image", "container runtime", `image "`+badRuntime+`"`, "not found", "instance pool-")
	if st.AvailableReplicas != 0 || st.FailingReplicas != 1 || st.PodsPending != 1 {
		t.Errorf("status %s", summary(st))
	}
	time.Sleep(2 * time.Second) // several passes and pull retries: still one event
	if notes := w.eventNotes("pool", string(vtv1alpha1.ReasonImagePullFailed)); len(notes) != 1 {
		t.Errorf("%d ImagePullFailed events, want 1: %q", len(notes), notes)
	}

	w.sim.ClearImagePullError(badRuntime)
	start := time.Now()
	w.waitHealthy("pool", 1, 15*time.Second)
	t.Logf("recovered %s after the image became pullable", time.Since(start).Round(time.Millisecond))
}

// minAvailableReplicas 0 is no excuse: with a lease waiting and the image failing, the pool
// cannot serve, and Available says so. (It used to say True, WarmBufferMet.)
func TestAvailableFalseOnEmptyFailingPoolWithoutBuffer(t *testing.T) {
	w := newWorld(t, fastFailures()...)
	w.sim.SetImagePullError(badRuntime, "")
	w.class("fake", runtimeImage(badRuntime))
	w.controller(env.Config)
	w.set("pool", 0, 4, 0)
	// Upstream ends a lease at once when no Exporter matches, so one must exist: the floor
	// of 1 for a moment creates it, then the lease's demand keeps it.
	set := w.getSet("pool")
	w.edit(set, func() { set.Spec.MinReplicas = 1 })
	w.waitStatus("pool", 20*time.Second, "an instance", func(s vtv1alpha1.ExporterSetStatus) bool { return s.Replicas == 1 })
	w.lease("l1", "pool")
	w.edit(set, func() { set.Spec.MinReplicas = 0 })
	w.waitFailure("pool", vtv1alpha1.ReasonImagePullFailed, 20*time.Second)
}

// A class the cluster cannot schedule (a device no node has): Unschedulable, quoting the
// scheduler; recovery once a node offers the device.
func TestUnschedulable(t *testing.T) {
	// Its own node: the Node object is shared by every simulator on this API server.
	w := newWorld(t, append(fastFailures(), jumpsim.WithNodeName("node-unschedulable"), jumpsim.WithNodeCapacity(corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}))...)
	w.class("fake", func(c *vtv1alpha1.VirtualTargetClass) {
		c.Spec.Scheduling = &vtv1alpha1.Scheduling{Resources: &corev1.ResourceRequirements{
			Limits: corev1.ResourceList{"devices.kubevirt.io/kvm": resource.MustParse("1")}}}
	})
	w.controller(env.Config)
	w.set("pool", 0, 4, 2)
	w.waitFailure("pool", vtv1alpha1.ReasonUnschedulable, 30*time.Second)
	// The scheduler marks the two Pods one at a time, so the first Unschedulable status may
	// count one of them; the second must follow.
	st := w.waitStatus("pool", 10*time.Second, "both instances unschedulable", func(s vtv1alpha1.ExporterSetStatus) bool {
		_, msg := degraded(s)
		return strings.Contains(msg, "2 of 2 instances cannot be scheduled")
	})
	_, msg := degraded(st)
	mustContain(t, "Degraded message", msg, "2 of 2 instances cannot be scheduled", "Insufficient devices.kubevirt.io/kvm")

	if err := w.sim.SetNodeCapacity(w.ctx, corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("64"), corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods: resource.MustParse("110"), "devices.kubevirt.io/kvm": resource.MustParse("1k")}); err != nil {
		t.Fatal(err)
	}
	w.waitHealthy("pool", 2, 15*time.Second)
}

// A Pod that runs while its exporter never registers: NotRegistering after the grace.
func TestNotRegistering(t *testing.T) {
	w := newWorld(t, fastFailures()...)
	w.class("fake")
	w.controller(env.Config, exporterset.WithTuning(tuning.Knobs{RegistrationGrace: time.Second}))
	w.set("pool", 0, 4, 1)
	w.waitHealthy("pool", 1, 30*time.Second)
	name := w.exporters("pool")[0].Name
	w.sim.SetNotRegistering(w.ns, name, "connection refused")
	st := w.waitFailure("pool", vtv1alpha1.ReasonNotRegistering, 20*time.Second)
	_, msg := degraded(st)
	mustContain(t, "Degraded message", msg, "instance "+name, "has not registered with the Jumpstarter controller")
	w.sim.ClearNotRegistering(w.ns, name)
	w.waitHealthy("pool", 1, 15*time.Second)
}

// A runtime sidecar that keeps crashing: TargetCrashing although its exporter registered;
// the instance is not available, it is replaced under a backoff that bounds churn over a
// minute, and a fixed image recovers at once (the change resets the backoff).
func TestCrashLoopBackoffBoundsChurn(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of constant failure")
	}
	// The runtime crashes at once, before its exporter registers (as a QEMU that cannot open
	// its disk does): no instance is ever available.
	w := newWorld(t, append(fastFailures(), jumpsim.WithRegistrationDelay(time.Second))...)
	w.sim.SetCrash(badRuntime, jumpsim.Crash{ExitCode: 1, Reason: "Error", Message: "qemu: could not open disk"})
	class := w.class("fake", runtimeImage(badRuntime), sidecarLayout)
	w.controller(env.Config)
	w.set("pool", 0, 3, 2)

	// The status says TargetCrashing only while a crashing instance is in the pool: the pass
	// that sees the crash also retires it, and the next says BackingOff. A poll can miss that
	// moment; the event of the new problem stays.
	w.eventually(30*time.Second, "a TargetCrashing event", func() string {
		if len(w.eventNotes("pool", string(vtv1alpha1.ReasonTargetCrashing))) == 0 {
			return "none yet"
		}
		return ""
	})
	mustContain(t, "TargetCrashing event", w.eventNotes("pool", string(vtv1alpha1.ReasonTargetCrashing))[0], "container runtime", "exit code 1 (Error)")
	st := w.getSet("pool").Status
	window := time.Now()
	seqStart := st.InstanceSequence
	var sawBackoff bool
	reasons := map[vtv1alpha1.ConditionReason]int{}
	for time.Since(window) < time.Minute {
		st = w.getSet("pool").Status
		if st.AvailableReplicas != 0 {
			t.Fatalf("a crash-looping instance counted as available: %s", summary(st))
		}
		if a := availableCond(st); a == nil || a.Status != metav1.ConditionFalse {
			t.Fatalf("Available must be False while every instance crashes: %+v", a)
		}
		// Retiring instances are disabled and on their way out; the rest must fit the ceiling.
		if live := st.Replicas - st.ExportersDisabled; live > 3 {
			t.Fatalf("%d live instances, above the ceiling: %s", live, summary(st))
		}
		r, m := degraded(st)
		if strings.Contains(m, "next attempt at") {
			sawBackoff = true
		}
		// Between the crash and the back-off the pool is Degraded for one of the two, never
		// healthy and never for another cause.
		if r != vtv1alpha1.ReasonTargetCrashing && r != vtv1alpha1.ReasonBackingOff {
			t.Fatalf("Degraded reason %q while every instance crashes (want TargetCrashing or BackingOff): %s", r, summary(st))
		}
		reasons[r]++
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("Degraded reasons seen over the minute, by poll: %v", reasons)
	created := st.InstanceSequence - seqStart
	// 2s, 4s, 8s, 16s, 32s: about five replacement rounds of at most 2 instances each.
	if created > 12 {
		t.Errorf("%d instances created in a minute of constant failure, want at most 12", created)
	}
	if created < 2 {
		t.Errorf("%d instances created in a minute: failing instances were not replaced", created)
	}
	if !sawBackoff {
		t.Error("the Degraded message never said when the next attempt is")
	}
	t.Logf("%d instances created in a minute of constant failure", created)

	w.edit(class, func() { runtimeImage("registry.example/runtime:fixed")(class) })
	start := time.Now()
	w.waitHealthy("pool", 2, 20*time.Second)
	t.Logf("recovered %s after the class was fixed", time.Since(start).Round(time.Millisecond))
}

// An exporter that exits with an error (restartPolicy Never): the Pod fails, TargetCrashing
// is reported with the exit code, and the instance is replaced.
func TestExporterCrashFailsPod(t *testing.T) {
	w := newWorld(t, fastFailures()...)
	w.class("fake", func(c *vtv1alpha1.VirtualTargetClass) {
		c.Spec.Images = &vtv1alpha1.Images{Exporter: &vtv1alpha1.ImageSpec{Image: "registry.example/exporter:oom"}}
	})
	w.sim.SetCrash("registry.example/exporter:oom", jumpsim.Crash{ExitCode: 137, Reason: "OOMKilled", After: 500 * time.Millisecond})
	w.controller(env.Config)
	w.set("pool", 0, 2, 1)
	w.eventually(30*time.Second, "a TargetCrashing event naming OOMKilled", func() string {
		for _, n := range w.eventNotes("pool", string(vtv1alpha1.ReasonTargetCrashing)) {
			if strings.Contains(n, "exit code 137 (OOMKilled)") {
				return ""
			}
		}
		return fmt.Sprintf("events %q; status %s", w.eventNotes("pool", string(vtv1alpha1.ReasonTargetCrashing)), summary(w.getSet("pool").Status))
	})
	w.waitStatus("pool", 20*time.Second, "the crashed instance replaced", func(s vtv1alpha1.ExporterSetStatus) bool { return s.InstanceSequence >= 2 })
}

// A startup deadline: an instance not ready in time is replaced, and the reason is said.
func TestStartupDeadline(t *testing.T) {
	w := newWorld(t, jumpsim.WithPodStartDelay(time.Hour))
	w.class("fake", func(c *vtv1alpha1.VirtualTargetClass) {
		c.Spec.StartupDeadline = &metav1.Duration{Duration: 2 * time.Second}
	})
	w.controller(env.Config)
	w.set("pool", 0, 2, 1)
	// The pass that finds the deadline passed also retires the instance; while the set then
	// backs off, Degraded says BackingOff and names the last failure.
	w.waitStatus("pool", 30*time.Second, "StartupDeadlineExceeded reported", func(s vtv1alpha1.ExporterSetStatus) bool {
		r, msg := degraded(s)
		a := availableCond(s)
		return a != nil && a.Status == metav1.ConditionFalse && (r == vtv1alpha1.ReasonStartupDeadlineExceeded ||
			r == vtv1alpha1.ReasonBackingOff && strings.Contains(msg, string(vtv1alpha1.ReasonStartupDeadlineExceeded)))
	})
	w.waitStatus("pool", 20*time.Second, "the slow instance replaced", func(s vtv1alpha1.ExporterSetStatus) bool { return s.InstanceSequence >= 2 })
	w.sim.SetPodStartDelay(0)
	w.waitHealthy("pool", 1, 30*time.Second)
}

// Eviction and node loss: an idle instance is replaced, a leased one is kept until its lease
// ends (never break a lease), and both are reported.
func TestEvictionAndNodeLossKeepLeases(t *testing.T) {
	w := newWorld(t, append(fastFailures(), jumpsim.WithNodeName("node-lost"), jumpsim.WithOnlineTimeout(2*time.Second))...)
	w.class("fake")
	w.controller(env.Config)
	w.set("pool", 0, 4, 1)
	w.waitHealthy("pool", 1, 30*time.Second)
	l := w.lease("l1", "pool")
	leasedName := w.waitAssigned(l)
	w.waitHealthy("pool", 1, 30*time.Second)

	if err := w.sim.EvictPod(w.ctx, w.ns, leasedName, ""); err != nil {
		t.Fatal(err)
	}
	w.waitStatus("pool", 20*time.Second, "Evicted reported", func(s vtv1alpha1.ExporterSetStatus) bool {
		r, _ := degraded(s)
		return r == vtv1alpha1.ReasonEvicted
	})
	time.Sleep(2 * time.Second)
	if e := getExporter(t, w, leasedName); e == nil || e.DeletionTimestamp != nil || !e.IsEnabled() {
		t.Fatalf("the leased instance %s was deleted or disabled after its Pod was evicted", leasedName)
	}
	w.release(l)
	w.waitStatus("pool", 20*time.Second, "the evicted instance replaced after its lease", func(s vtv1alpha1.ExporterSetStatus) bool {
		return getExporter(t, w, leasedName) == nil && s.AvailableReplicas >= 1
	})

	if err := w.sim.LoseNode(w.ctx); err != nil {
		t.Fatal(err)
	}
	// The idle instance on the lost node is replaced at once; its replacement cannot be
	// scheduled (the node is tainted unreachable): the loss is reported by an event, and the
	// pool is not available either way.
	w.eventually(30*time.Second, "a NodeLost event", func() string {
		if len(w.eventNotes("pool", string(vtv1alpha1.ReasonNodeLost))) > 0 {
			return ""
		}
		return summary(w.getSet("pool").Status)
	})
	w.waitStatus("pool", 30*time.Second, "not available while the node is lost", func(s vtv1alpha1.ExporterSetStatus) bool {
		a := availableCond(s)
		return s.AvailableReplicas == 0 && a != nil && a.Status == metav1.ConditionFalse && s.FailingReplicas > 0
	})
	if err := w.sim.RestoreNode(w.ctx); err != nil {
		t.Fatal(err)
	}
	w.waitHealthy("pool", 1, 30*time.Second)
}

// A provisioner warning (e.g. a driver type it does not check) is one Warning event per
// version of the set, and never blocks the pool.
func TestProvisionerWarningIsAnEventNotABlock(t *testing.T) {
	w := newWorld(t)
	w.class("fake", func(c *vtv1alpha1.VirtualTargetClass) {
		c.Spec.Parameters = &apiextensionsv1.JSON{Raw: []byte(`{"warn":"driver type \"jumpstarter_driver_x.X\" is not checked"}`)}
	})
	w.controller(env.Config)
	w.set("pool", 0, 2, 1)
	w.waitHealthy("pool", 1, 30*time.Second)
	time.Sleep(time.Second) // more passes: still one event
	notes := w.eventNotes("pool", string(exporterset.EventDriverWarning))
	if len(notes) != 1 || !strings.Contains(notes[0], `spec.parameters.warn: driver type "jumpstarter_driver_x.X" is not checked`) {
		t.Errorf("DriverWarning events %q, want one naming the field", notes)
	}
}

// InPlaceReuse: an instance whose fresh Pods keep failing is restarted under the backoff,
// not once a second.
func TestInPlaceReuseRestartsBackOff(t *testing.T) {
	if testing.Short() {
		t.Skip("half a minute of constant failure")
	}
	w := newWorld(t, fastFailures()...)
	const crashing = "registry.example/exporter:crashing"
	w.sim.SetCrash(crashing, jumpsim.Crash{ExitCode: 1, Reason: "Error", After: 200 * time.Millisecond})
	w.class("fake", func(c *vtv1alpha1.VirtualTargetClass) {
		c.Spec.Images = &vtv1alpha1.Images{Exporter: &vtv1alpha1.ImageSpec{Image: crashing}}
	})
	w.controller(env.Config)
	w.set("pool", 0, 1, 1, func(s *vtv1alpha1.ExporterSet) { s.Spec.RecycleStrategy = vtv1alpha1.RecycleInPlaceReuse })
	w.waitFailure("pool", vtv1alpha1.ReasonTargetCrashing, 30*time.Second)
	name := w.exporters("pool")[0].Name
	pods := map[types.UID]bool{} // the instance's Pods (same name, new UID each restart)
	for start := time.Now(); time.Since(start) < 30*time.Second; time.Sleep(100 * time.Millisecond) {
		var pod corev1.Pod
		if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &pod); err == nil {
			pods[pod.UID] = true
		}
	}
	// Restarts after 2, 4, 8 and 16 s of backoff: four or five Pods in 30 s, where a fixed
	// 2 s delay gave nine.
	if len(pods) > 6 || len(pods) < 2 {
		t.Errorf("%d Pods in 30 s of constant failure, want 2 to 6", len(pods))
	}
	t.Logf("%d Pods in 30 s; %s", len(pods), summary(w.getSet("pool").Status))
}
