package jumpsim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

func podObj(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

// ExitAndReplace: the exporter exits after its lease, its Pod completes, and it is never
// offered to the next lease on the way out.
func TestExitOnLeaseEndCompletesPod(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	startExporter(t, sim, ns, "once", board, true)
	if _, err := sim.TakeLease(ctx, ns, "l1", board, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitLeaseAssigned(ctx, ns, "l1"); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.TakeLease(ctx, ns, "l2", board, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitLeasePending(ctx, ns, "l2", ReasonNotAvailable); err != nil {
		t.Fatal(err)
	}
	if err := sim.ReleaseLease(ctx, ns, "l1"); err != nil {
		t.Fatal(err)
	}
	pod, err := sim.WaitPodPhase(ctx, ns, "once", corev1.PodSucceeded)
	if err != nil {
		t.Fatal(err)
	}
	cs := pod.Status.ContainerStatuses[0]
	if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 || cs.State.Terminated.Reason != "Completed" {
		t.Fatalf("exporter container %+v", cs.State)
	}
	if _, err := sim.WaitExporter(ctx, ns, "once", func(e *jsv1.Exporter) bool {
		return offline(e) && e.Status.LeaseRef == nil
	}); err != nil {
		t.Fatal(err)
	}
	// The second lease waits for a fresh exporter instead of getting the exiting one.
	consistently(t, 500*time.Millisecond, func() error {
		if l := getObj(t, leaseObj(ns, "l2")); l.Status.ExporterRef != nil || l.Status.Ended {
			return fmt.Errorf("l2: %+v", l.Status)
		}
		return nil
	})
	if sim.Count(ActionLeaseAssigned) != 1 {
		t.Fatalf("%d assignments", sim.Count(ActionLeaseAssigned))
	}
	startExporter(t, sim, ns, "fresh", board, true)
	if l, err := sim.WaitLeaseAssigned(ctx, ns, "l2"); err != nil || l.Status.ExporterRef.Name != "fresh" {
		t.Fatalf("l2: %v %v", l.Status.ExporterRef, err)
	}
}

// With exitOnLeaseEnd false (InPlaceReuse) the Pod keeps running across leases.
func TestInPlaceReusePodKeepsRunning(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	startExporter(t, sim, ns, "reuse", board, false)
	for _, l := range []string{"a", "b"} {
		if _, err := sim.TakeLease(ctx, ns, l, board, 0); err != nil {
			t.Fatal(err)
		}
		if _, err := sim.WaitLeaseAssigned(ctx, ns, l); err != nil {
			t.Fatal(err)
		}
		if err := sim.ReleaseLease(ctx, ns, l); err != nil {
			t.Fatal(err)
		}
		if _, err := sim.WaitLeaseEnded(ctx, ns, l); err != nil {
			t.Fatal(err)
		}
	}
	consistently(t, 300*time.Millisecond, func() error {
		if p := getObj(t, podObj(ns, "reuse")); p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("pod %s", p.Status.Phase)
		}
		return nil
	})
}

// Under restartPolicy Always an exiting exporter restarts in place and serves again.
func TestExitOnLeaseEndRestartPolicyAlways(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	ex := createExporter(t, ns, "loop", board)
	createConfigSecret(t, ex, true)
	pod := exporterPod(ex, "loop")
	pod.Spec.RestartPolicy = corev1.RestartPolicyAlways
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(ex, jsv1.GroupVersion.WithKind("Exporter"))}
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitExporterReady(ctx, ns, "loop"); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.TakeLease(ctx, ns, "l", board, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitLeaseAssigned(ctx, ns, "l"); err != nil {
		t.Fatal(err)
	}
	if err := sim.ReleaseLease(ctx, ns, "l"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		p := getObj(t, podObj(ns, "loop"))
		if p.Status.Phase != corev1.PodRunning || p.Status.ContainerStatuses[0].RestartCount != 1 {
			return fmt.Errorf("pod %s restarts %d", p.Status.Phase, p.Status.ContainerStatuses[0].RestartCount)
		}
		return nil
	})
	if _, err := sim.WaitExporter(ctx, ns, "loop", func(e *jsv1.Exporter) bool {
		return ExporterReady(e) && e.Status.ExporterStatusValue == jsv1.ExporterStatusAvailable
	}); err != nil {
		t.Fatal(err)
	}
	waitCount(t, sim, ActionPodRestarted, 1)
}

func TestPodFailurePredicateAndDelay(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t,
		WithPodStartDelay(time.Second),
		WithPodFailure(func(p *corev1.Pod) bool { return strings.HasPrefix(p.Name, "bad") }))
	ctx := testCtx(t)
	ex := createExporter(t, ns, "e", nil)
	createConfigSecret(t, ex, false)
	createPod(t, ex, "good")
	createPod(t, ex, "bad")
	start := time.Now()
	if _, err := sim.WaitPodPhase(ctx, ns, "good", corev1.PodRunning); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Fatalf("pod ran after %s despite the start delay", d)
	}
	pod, err := sim.WaitPodPhase(ctx, ns, "bad", corev1.PodFailed)
	if err != nil {
		t.Fatal(err)
	}
	if cs := pod.Status.ContainerStatuses[0]; cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 1 {
		t.Fatalf("failed container %+v", cs.State)
	}
}

// Bound Pods linger Terminating in envtest until a kubelet finishes their deletion; with a
// termination delay the simulated kubelet lets them linger that long.
func TestTerminatingPodLingersThenGoes(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t, WithPodTerminationDelay(time.Second))
	ctx := testCtx(t)
	ex := startExporter(t, sim, ns, "e", nil, false)
	pod := podObj(ns, "e")
	deleted := time.Now()
	if err := env.Client.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	got := getObj(t, podObj(ns, "e"))
	if got.DeletionTimestamp == nil {
		t.Fatal("bound pod deleted at once")
	}
	// The exporter goes offline as soon as its Pod is terminating.
	if _, err := sim.WaitExporter(ctx, ns, ex.Name, offline); err != nil {
		t.Fatal(err)
	}
	if err := sim.WaitGone(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(deleted); d < 900*time.Millisecond {
		t.Fatalf("pod gone after %s despite the termination delay", d)
	}
	var failed bool
	for _, e := range sim.EventsFor(ns, "e") {
		failed = failed || (e.Action == ActionPodFailed && strings.Contains(e.Detail, "deletion"))
	}
	if !failed {
		t.Fatal("no terminal phase reported before the pod went")
	}
}

// Facts about envtest the simulator exists for; they fail if envtest changes.
func TestEnvtestHasNoKubeletOrGarbageCollector(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	ns, err := env.CreateNamespace(ctx, "bare")
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name, node string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	unbound, bound := mk("unbound", ""), mk("bound", "node-1")
	for _, p := range []*corev1.Pod{unbound, bound} {
		if err := env.Client.Delete(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(unbound), &corev1.Pod{}); err == nil {
		t.Error("an unbound pod survived its deletion")
	}
	time.Sleep(500 * time.Millisecond)
	var left corev1.Pod
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(bound), &left); err != nil || left.DeletionTimestamp == nil {
		t.Errorf("a bound pod should linger Terminating without a kubelet: %v", err)
	}
	_ = env.Client.Delete(ctx, &left, client.GracePeriodSeconds(0))

	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	if err := env.Client.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dep", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID, Controller: ptr.To(true),
	}}}}
	if err := env.Client.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, owner); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(dep), &corev1.ConfigMap{}); err != nil {
		t.Errorf("dependent gone without a garbage collector: %v", err)
	}
}
