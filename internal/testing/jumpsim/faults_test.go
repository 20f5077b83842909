package jumpsim

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

const (
	exporterImage = "quay.io/jumpstarter-dev/jumpstarter:latest"
	runtimeImage  = "quay.io/jumpstarter-dev/virtual/qemu-runtime:latest"
)

// waitPod waits until check accepts the Pod namespace/name and returns it.
func waitPod(t *testing.T, ns, name string, timeout time.Duration, check func(*corev1.Pod) error) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	eventually(t, timeout, func() error {
		pod = getObj(t, podObj(ns, name))
		return check(pod)
	})
	return pod
}

func podCondition(pod *corev1.Pod, typ corev1.PodConditionType) corev1.PodCondition {
	for _, c := range pod.Status.Conditions {
		if c.Type == typ {
			return c
		}
	}
	return corev1.PodCondition{}
}

func waitingReason(cs corev1.ContainerStatus) string {
	if cs.State.Waiting == nil {
		return ""
	}
	return cs.State.Waiting.Reason
}

func TestImagePullFailureThenRecovery(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t, WithImagePullBackOff(200*time.Millisecond))
	ctx := testCtx(t)
	sim.SetImagePullError(runtimeImage, "")
	ex := createExporter(t, ns, "pull", nil)
	createConfigSecret(t, ex, false)
	createPod(t, ex, "pull")

	registry := `failed to pull and unpack image "` + runtimeImage + `": failed to resolve reference "` + runtimeImage + `": ` + runtimeImage + `: not found`
	// The first failed pull shows ErrImagePull with the registry's message (for one pull
	// back-off: the event log proves it even if polling under load missed it).
	eventually(t, 10*time.Second, func() error {
		for _, e := range sim.EventsFor(ns, "pull") {
			if e.Action == ActionImagePullFailed {
				if want := "container target-runtime: ErrImagePull: " + registry; e.Detail != want {
					return fmt.Errorf("first failure %q, want %q", e.Detail, want)
				}
				return nil
			}
		}
		return fmt.Errorf("no pull failure yet")
	})
	pod := waitPod(t, ns, "pull", 10*time.Second, func(p *corev1.Pod) error {
		if r := waitingReason(p.Status.InitContainerStatuses[1]); r != "ImagePullBackOff" {
			return fmt.Errorf("sidecar waiting %q", r)
		}
		return nil
	})
	want := `Back-off pulling image "` + runtimeImage + `": ErrImagePull: ` + registry
	if m := pod.Status.InitContainerStatuses[1].State.Waiting.Message; m != want {
		t.Fatalf("back-off message\n got %s\nwant %s", m, want)
	}
	if pod.Status.Phase != corev1.PodPending || podCondition(pod, corev1.PodScheduled).Status != corev1.ConditionTrue {
		t.Fatalf("phase %s, PodScheduled %+v", pod.Status.Phase, podCondition(pod, corev1.PodScheduled))
	}
	if cs := pod.Status.InitContainerStatuses[0]; cs.State.Terminated == nil || cs.State.Terminated.Reason != "Completed" {
		t.Fatalf("copy-launcher %+v", cs.State)
	}
	if r := waitingReason(pod.Status.ContainerStatuses[0]); r != "PodInitializing" {
		t.Fatalf("exporter container waiting %q", r)
	}
	if c := podCondition(pod, corev1.PodInitialized); c.Status != corev1.ConditionFalse || c.Message != "containers with incomplete status: [target-runtime]" {
		t.Fatalf("Initialized %+v", c)
	}
	if c := podCondition(pod, corev1.PodReady); c.Status != corev1.ConditionFalse || c.Message != "containers with unready status: [target-runtime exporter]" {
		t.Fatalf("Ready %+v", c)
	}
	if e := getObj(t, ex); ExporterReady(e) {
		t.Fatal("exporter registered without a running pod")
	}

	sim.ClearImagePullError(runtimeImage)
	start := time.Now()
	if _, err := sim.WaitExporterReady(ctx, ns, "pull"); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("recovered after %s", d)
	}
	if sim.Count(ActionImagePullFailed) < 2 {
		t.Fatalf("%d pull failures recorded", sim.Count(ActionImagePullFailed))
	}
}

func TestMainContainerCrashFailsPod(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	sim.SetCrash(exporterImage, Crash{ExitCode: 137, Reason: "OOMKilled", Message: "out of memory", After: 300 * time.Millisecond})
	ex := createExporter(t, ns, "oom", nil)
	createConfigSecret(t, ex, false)
	createPod(t, ex, "oom")
	pod, err := sim.WaitPodPhase(ctx, ns, "oom", corev1.PodFailed)
	if err != nil {
		t.Fatal(err)
	}
	term := pod.Status.ContainerStatuses[0].State.Terminated
	if term == nil || term.ExitCode != 137 || term.Reason != "OOMKilled" || term.Message != "out of memory" {
		t.Fatalf("exporter container %+v", pod.Status.ContainerStatuses[0].State)
	}
	if cs := pod.Status.ContainerStatuses[0]; cs.RestartCount != 0 || cs.Ready {
		t.Fatalf("restartPolicy Never container restarted or ready: %+v", cs)
	}
	if cs := pod.Status.InitContainerStatuses[1]; cs.State.Terminated == nil {
		t.Fatalf("sidecar still %+v after the pod failed", cs.State)
	}
	if c := podCondition(pod, corev1.PodReady); c.Status != corev1.ConditionFalse || c.Reason != "PodFailed" {
		t.Fatalf("Ready %+v", c)
	}
	if _, err := sim.WaitExporter(ctx, ns, "oom", offline); err != nil {
		t.Fatal(err)
	}
}

func TestSidecarCrashLoop(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t, WithCrashLoopBackOff(200*time.Millisecond, time.Second))
	ctx := testCtx(t)
	sim.SetCrash(runtimeImage, Crash{ExitCode: 2})
	ex := createExporter(t, ns, "loop", nil)
	createConfigSecret(t, ex, false)
	created := createPod(t, ex, "loop")

	pod := waitPod(t, ns, "loop", 10*time.Second, func(p *corev1.Pod) error {
		if len(p.Status.InitContainerStatuses) != 2 || p.Status.InitContainerStatuses[1].RestartCount < 1 {
			return fmt.Errorf("sidecar not restarting yet: %+v", p.Status.InitContainerStatuses)
		}
		if waitingReason(p.Status.InitContainerStatuses[1]) != "CrashLoopBackOff" {
			return fmt.Errorf("sidecar %+v", p.Status.InitContainerStatuses[1].State)
		}
		return nil
	})
	cs := pod.Status.InitContainerStatuses[1]
	prefix := "back-off "
	suffix := fmt.Sprintf(" restarting failed container=target-runtime pod=loop_%s(%s)", ns, created.UID)
	if m := cs.State.Waiting.Message; !strings.HasPrefix(m, prefix) || !strings.HasSuffix(m, suffix) {
		t.Fatalf("CrashLoopBackOff message %q", m)
	}
	if lt := cs.LastTerminationState.Terminated; lt == nil || lt.ExitCode != 2 || lt.Reason != "Error" {
		t.Fatalf("lastState %+v", cs.LastTerminationState)
	}
	if pod.Status.Phase != corev1.PodRunning {
		t.Fatalf("phase %s", pod.Status.Phase)
	}
	for _, typ := range []corev1.PodConditionType{corev1.PodReady, corev1.ContainersReady} {
		if c := podCondition(pod, typ); c.Status != corev1.ConditionFalse || c.Message != "containers with unready status: [target-runtime]" {
			t.Fatalf("%s %+v", typ, c)
		}
	}
	// The exporter runs in its own container: it registers although its target is broken.
	if _, err := sim.WaitExporterReady(ctx, ns, "loop"); err != nil {
		t.Fatal(err)
	}
	first := cs.RestartCount
	waitPod(t, ns, "loop", 10*time.Second, func(p *corev1.Pod) error {
		if n := p.Status.InitContainerStatuses[1].RestartCount; n < first+2 {
			return fmt.Errorf("restartCount %d, was %d", n, first)
		}
		return nil
	})

	sim.ClearCrash(runtimeImage)
	pod = waitPod(t, ns, "loop", 10*time.Second, func(p *corev1.Pod) error {
		if c := podCondition(p, corev1.PodReady); c.Status != corev1.ConditionTrue || p.Status.InitContainerStatuses[1].State.Running == nil {
			return fmt.Errorf("not recovered: Ready %+v sidecar %+v", c, p.Status.InitContainerStatuses[1].State)
		}
		return nil
	})
	consistently(t, 1500*time.Millisecond, func() error {
		if p := getObj(t, podObj(ns, "loop")); p.Status.InitContainerStatuses[1].RestartCount != pod.Status.InitContainerStatuses[1].RestartCount {
			return fmt.Errorf("restarted after ClearCrash")
		}
		return nil
	})
	if sim.Count(ActionContainerCrashed) < 3 {
		t.Fatalf("%d crashes recorded", sim.Count(ActionContainerCrashed))
	}
}

func TestEvictPod(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	startExporter(t, sim, ns, "ev", nil, false)
	if err := sim.EvictPod(ctx, ns, "ev", ""); err != nil {
		t.Fatal(err)
	}
	pod := getObj(t, podObj(ns, "ev"))
	if pod.Status.Phase != corev1.PodFailed || pod.Status.Reason != "Evicted" || pod.Status.Message != DefaultEvictionMessage {
		t.Fatalf("status %s %q %q", pod.Status.Phase, pod.Status.Reason, pod.Status.Message)
	}
	if c := podCondition(pod, corev1.DisruptionTarget); c.Status != corev1.ConditionTrue || c.Reason != "TerminationByKubelet" || c.Message != DefaultEvictionMessage {
		t.Fatalf("DisruptionTarget %+v", c)
	}
	for _, cs := range append(pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses[1]) {
		if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 137 {
			t.Fatalf("%s: %+v", cs.Name, cs.State)
		}
	}
	if _, err := sim.WaitExporter(ctx, ns, "ev", offline); err != nil {
		t.Fatal(err)
	}
	if err := sim.EvictPod(ctx, ns, "ev", ""); err == nil {
		t.Fatal("evicted a failed pod again")
	}
	waitCount(t, sim, ActionPodEvicted, 1)
}

func TestNotRegistering(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	ex := startExporter(t, sim, ns, "reg", nil, false)
	notRegistered := func(e *jsv1.Exporter) bool {
		return offline(e) && !meta.IsStatusConditionTrue(e.Status.Conditions, jsv1.ExporterConditionRegistered)
	}

	sim.SetNotRegistering(ns, "reg", "connection refused")
	if _, err := sim.WaitExporter(ctx, ns, "reg", notRegistered); err != nil {
		t.Fatal(err)
	}
	if m, ok := sim.NotRegisteringReason(ns, "reg"); !ok || m != "connection refused" {
		t.Fatalf("reason %q %v", m, ok)
	}
	if p := getObj(t, podObj(ns, "reg")); p.Status.Phase != corev1.PodRunning {
		t.Fatalf("pod %s", p.Status.Phase)
	}
	sim.ClearNotRegistering(ns, "reg")
	if _, err := sim.WaitExporterReady(ctx, ns, "reg"); err != nil {
		t.Fatal(err)
	}

	// A rotated token the config does not have yet: the exporter cannot authenticate.
	tok, err := sim.RotateToken(ctx, ns, "reg")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitExporter(ctx, ns, "reg", notRegistered); err != nil {
		t.Fatal(err)
	}
	if m, _ := sim.NotRegisteringReason(ns, "reg"); !strings.Contains(m, "Unauthenticated") {
		t.Fatalf("reason %q", m)
	}
	sec := getObj(t, configSecretFor(ex, false))
	sec.Data[ExporterConfigKey] = []byte(strings.Replace(configYAML(ex, false), Token(ns, "reg", ex.UID, 0), tok, 1))
	if err := env.Client.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitExporterReady(ctx, ns, "reg"); err != nil {
		t.Fatal(err)
	}

	// A config naming another endpoint, or trusting no CA. Each waits for its own reason: the
	// exporter is already not registered when the second config arrives.
	for _, c := range []struct{ name, bad, reason string }{
		{"endpoint", strings.Replace(configYAML(ex, false), DefaultEndpoint, "elsewhere.example:443", 1), `"elsewhere.example:443"`},
		{"ca", strings.Replace(configYAML(ex, false), "insecure: true", "insecure: false", 1), "no CA"},
	} {
		before := sim.Count(ActionNotRegistering)
		sec = getObj(t, sec)
		sec.Data[ExporterConfigKey] = []byte(strings.Replace(c.bad, Token(ns, "reg", ex.UID, 0), tok, 1))
		if err := env.Client.Update(ctx, sec); err != nil {
			t.Fatal(err)
		}
		itsOwn := func(e *jsv1.Exporter) bool {
			m, _ := sim.NotRegisteringReason(ns, "reg")
			return notRegistered(e) && strings.Contains(m, c.reason) && sim.Count(ActionNotRegistering) > before
		}
		if _, err := sim.WaitExporter(ctx, ns, "reg", itsOwn); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if m, _ := sim.NotRegisteringReason(ns, "reg"); !strings.Contains(m, "failed to connect") {
			t.Fatalf("%s: reason %q", c.name, m)
		}
	}
	if sim.Count(ActionNotRegistering) < 4 {
		t.Fatalf("%d NotRegistering events", sim.Count(ActionNotRegistering))
	}
}

func TestRegistrationDelay(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t, WithRegistrationDelay(time.Second))
	ctx := testCtx(t)
	ex := createExporter(t, ns, "slow", nil)
	createConfigSecret(t, ex, false)
	createPod(t, ex, "slow")
	if _, err := sim.WaitExporterReady(ctx, ns, "slow"); err != nil {
		t.Fatal(err)
	}
	waitCount(t, sim, ActionExporterOnline, 1)
	var running, online time.Time
	for _, e := range sim.EventsFor(ns, "slow") {
		switch e.Action {
		case ActionPodRunning:
			running = e.Time
		case ActionExporterOnline:
			online = e.Time
		}
	}
	if d := online.Sub(running); running.IsZero() || d < 800*time.Millisecond {
		t.Fatalf("registered %s after running", d)
	}
	sim.SetRegistrationDelay(0)
	sim.SetPodStartDelay(0)
}
