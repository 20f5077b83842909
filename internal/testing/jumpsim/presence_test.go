package jumpsim

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

func offline(e *jsv1.Exporter) bool {
	v := e.Status.ExporterStatusValue
	return !meta.IsStatusConditionTrue(e.Status.Conditions, jsv1.ExporterConditionOnline) &&
		(v == jsv1.ExporterStatusOffline || v == "" && e.Status.LastSeen.IsZero()) // never seen: empty, as upstream
}

func TestOnlineWhileOwnedPodRuns(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	ex := startExporter(t, sim, ns, "ex1", map[string]string{"board": "virt"}, false)

	if ex.Status.ExporterStatusValue != jsv1.ExporterStatusAvailable || ex.Status.LastSeen.IsZero() {
		t.Fatalf("exporterStatus %q lastSeen %v", ex.Status.ExporterStatusValue, ex.Status.LastSeen)
	}
	if c := meta.FindStatusCondition(ex.Status.Conditions, jsv1.ExporterConditionRegistered); c.Reason != reasonRegister {
		t.Fatalf("Registered %+v", c)
	}
	if len(ex.Status.Devices) != 2 || ex.Status.Devices[0].Labels[DeviceNameLabel] != "power" {
		t.Fatalf("devices %+v", ex.Status.Devices)
	}

	pod := getObj(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ex1"}})
	if pod.Spec.NodeName != DefaultNodeName || pod.Status.PodIP == "" || pod.Status.StartTime == nil {
		t.Fatalf("pod not plausibly running: node %q ip %q", pod.Spec.NodeName, pod.Status.PodIP)
	}
	if len(pod.Status.InitContainerStatuses) != 2 || pod.Status.InitContainerStatuses[0].State.Terminated == nil ||
		pod.Status.InitContainerStatuses[1].State.Running == nil || !pod.Status.ContainerStatuses[0].Ready {
		t.Fatalf("container statuses %+v %+v", pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses)
	}

	// Chaos hooks.
	if err := sim.SetOffline(ctx, ns, "ex1"); err != nil {
		t.Fatal(err)
	}
	ex = getObj(t, ex)
	if !offline(ex) || !meta.IsStatusConditionTrue(ex.Status.Conditions, jsv1.ExporterConditionRegistered) {
		t.Fatalf("after SetOffline: %s %q", describeConditions(ex.Status.Conditions), ex.Status.ExporterStatusValue)
	}
	if err := sim.SetOnline(ctx, ns, "ex1"); err != nil {
		t.Fatal(err)
	}
	if ex = getObj(t, ex); !ExporterReady(ex) {
		t.Fatalf("after SetOnline: %s", describeConditions(ex.Status.Conditions))
	}

	// The Pod going away (the kubelet finishes the graceful deletion) takes it offline.
	if err := env.Client.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if err := sim.WaitGone(ctx, pod); err != nil {
		t.Fatal(err)
	}
	waitCount(t, sim, ActionPodFinalized, 1)
	ex, err := sim.WaitExporter(ctx, ns, "ex1", offline)
	if err != nil {
		t.Fatal(err)
	}
	if meta.IsStatusConditionTrue(ex.Status.Conditions, jsv1.ExporterConditionRegistered) || ex.Status.Devices != nil {
		t.Fatal("exporter still registered without its pod")
	}

	// A new Pod brings it back; a failed Pod takes it away again.
	createPod(t, ex, "ex1-b")
	if _, err := sim.WaitExporterReady(ctx, ns, "ex1"); err != nil {
		t.Fatal(err)
	}
	if err := sim.FailPod(ctx, ns, "ex1-b"); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitExporter(ctx, ns, "ex1", offline); err != nil {
		t.Fatal(err)
	}
}

func TestNotOnlineWithoutControllerRef(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	ex := createExporter(t, ns, "orphan", nil)
	createConfigSecret(t, ex, false)
	pod := exporterPod(ex, "unowned") // no owner reference
	if err := env.Client.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitPodPhase(ctx, ns, "unowned", corev1.PodRunning); err != nil {
		t.Fatal(err)
	}
	consistently(t, 500*time.Millisecond, func() error {
		if e := getObj(t, &jsv1.Exporter{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan"}}); ExporterReady(e) {
			return fmt.Errorf("exporter online through a pod it does not control")
		}
		return nil
	})
}

func TestPodWaitsForItsSecrets(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	ex := createExporter(t, ns, "early", nil)
	createPod(t, ex, "early") // before its config Secret
	eventually(t, 10*time.Second, func() error {
		pod := getObj(t, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "early"}})
		if pod.Status.Phase != corev1.PodPending || len(pod.Status.ContainerStatuses) == 0 ||
			pod.Status.ContainerStatuses[0].State.Waiting == nil || pod.Status.ContainerStatuses[0].State.Waiting.Reason != "ContainerCreating" {
			return fmt.Errorf("pod not waiting for its secret: %+v", pod.Status)
		}
		return nil
	})
	createConfigSecret(t, ex, false)
	if _, err := sim.WaitExporterReady(ctx, ns, "early"); err != nil {
		t.Fatal(err)
	}
}
