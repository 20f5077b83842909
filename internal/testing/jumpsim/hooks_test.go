package jumpsim

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// startHooked starts an exporter whose config holds hooks (YAML, indented under `hooks:`).
func startHooked(t *testing.T, sim *Simulator, ns, name string, exitOnLeaseEnd bool, hooks string) {
	t.Helper()
	ex := createExporter(t, ns, name, board)
	sec := configSecretFor(ex, exitOnLeaseEnd)
	sec.Data[ExporterConfigKey] = append(sec.Data[ExporterConfigKey], []byte("hooks:\n"+hooks)...)
	if err := controllerutil.SetControllerReference(ex, sec, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(testCtx(t), sec); err != nil {
		t.Fatal(err)
	}
	createPod(t, ex, name)
	if _, err := sim.WaitExporterReady(testCtx(t), ns, name); err != nil {
		t.Fatal(err)
	}
}

// reports are the statuses the exporter reported about its hooks, "Status: message".
func reports(sim *Simulator, ns, name string) []string {
	var out []string
	for _, e := range sim.EventsFor(ns, name) {
		if e.Action == ActionStatusReported {
			out = append(out, e.Detail)
		}
	}
	return out
}

func waitReports(t *testing.T, sim *Simulator, ns, name string, want ...string) {
	t.Helper()
	eventually(t, 10*time.Second, func() error {
		if diff := cmp.Diff(want, reports(sim, ns, name)); diff != "" {
			return fmt.Errorf("reports (-want +got):\n%s", diff)
		}
		return nil
	})
}

func waitStatus(t *testing.T, sim *Simulator, ns, name string, value jsv1.ExporterStatusValue, message string) *jsv1.Exporter {
	t.Helper()
	ex, err := sim.WaitExporter(testCtx(t), ns, name, func(e *jsv1.Exporter) bool {
		return e.Status.ExporterStatusValue == value && e.Status.StatusMessage == message
	})
	if err != nil {
		t.Fatalf("waiting for %s %q: %v", value, message, err)
	}
	return ex
}

func lease(t *testing.T, sim *Simulator, ns, name string) {
	t.Helper()
	ctx := testCtx(t)
	if _, err := sim.TakeLease(ctx, ns, name, board, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitLeaseAssigned(ctx, ns, name); err != nil {
		t.Fatal(err)
	}
}

func release(t *testing.T, sim *Simulator, ns, name string) {
	t.Helper()
	if err := sim.ReleaseLease(testCtx(t), ns, name); err != nil {
		t.Fatal(err)
	}
}

const failed1 = "Hook failed with exit code 1"

// Hooks that pass run for real (their environment names the lease) and report as upstream.
func TestHooksSucceed(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ran := filepath.Join(t.TempDir(), "ran")
	startHooked(t, sim, ns, "ex", false, fmt.Sprintf(`  beforeLease: {script: 'echo before $LEASE_NAME >> %[1]s'}
  afterLease: {exec: /bin/bash, script: 'echo after $LEASE_NAME >> %[1]s', timeout: 5, onFailure: exit}
`, ran))
	lease(t, sim, ns, "l1")
	leased := waitStatus(t, sim, ns, "ex", jsv1.ExporterStatusLeaseReady, "Ready for commands")
	release(t, sim, ns, "l1")
	waitStatus(t, sim, ns, "ex", jsv1.ExporterStatusAvailable, "Available for new lease")
	want := []string{"BeforeLeaseHook: Running beforeLease hook", "LeaseReady: Ready for commands",
		"AfterLeaseHook: Running afterLease hooks", "Available: Available for new lease"}
	waitReports(t, sim, ns, "ex", want...)
	// A look at the lease's end through a cache still showing the leaseRef changes nothing.
	ctx := testCtx(t)
	if err := sim.sched.clearLeaseRef(ctx, leased, "l1", true); err != nil {
		t.Fatal(err)
	}
	if err := sim.SetOnline(ctx, ns, "ex"); err != nil { // presence writes what it now sees
		t.Fatal(err)
	}
	if ex := getObj(t, leased.DeepCopy()); ex.Status.ExporterStatusValue != jsv1.ExporterStatusAvailable {
		t.Errorf("after a stale look at the lease's end: %s %q", ex.Status.ExporterStatusValue, ex.Status.StatusMessage)
	}
	waitReports(t, sim, ns, "ex", want...)
	if b, err := os.ReadFile(ran); err != nil || string(b) != "before l1\nafter l1\n" {
		t.Errorf("the hooks wrote %q (%v)", b, err)
	}
	// The next lease runs them again, on the same process.
	lease(t, sim, ns, "l2")
	waitStatus(t, sim, ns, "ex", jsv1.ExporterStatusLeaseReady, "Ready for commands")
}

// onFailure warn: the exporter carries on, with the warning as its message.
func TestHooksWarn(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	startHooked(t, sim, ns, "ex", false, `  beforeLease: {script: 'exit 1'}
  afterLease: {script: 'sleep 30', timeout: 1, onFailure: warn}
`)
	lease(t, sim, ns, "l1")
	waitStatus(t, sim, ns, "ex", jsv1.ExporterStatusLeaseReady, "[HOOK_WARNING] beforeLease hook warning: "+failed1)
	release(t, sim, ns, "l1")
	waitStatus(t, sim, ns, "ex", jsv1.ExporterStatusAfterLeaseHook, "Running afterLease hooks")
	waitStatus(t, sim, ns, "ex", jsv1.ExporterStatusAvailable, "[HOOK_WARNING] afterLease hook warning: Hook timed out after 1 seconds")
	lease(t, sim, ns, "l2") // still in service
}

// beforeLease endLease: the failure shows, the lease is released a second later without an
// afterLease hook, and the exporter is Available again.
func TestBeforeLeaseHookEndLease(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ran := filepath.Join(t.TempDir(), "after")
	startHooked(t, sim, ns, "ex", false, fmt.Sprintf(`  beforeLease: {script: 'exit 1', onFailure: endLease}
  afterLease: {script: 'touch %s'}
`, ran))
	lease(t, sim, ns, "l1")
	waitStatus(t, sim, ns, "ex", jsv1.ExporterStatusBeforeLeaseHookFailed, "beforeLease hook failed (on_failure=endLease): "+failed1)
	l, err := sim.WaitLeaseEnded(testCtx(t), ns, "l1")
	if err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(l.Status.Conditions, jsv1.LeaseConditionReady); c == nil || c.Reason != ReasonReleased {
		t.Errorf("lease ended with %+v, want released", c)
	}
	waitStatus(t, sim, ns, "ex", jsv1.ExporterStatusAvailable, "Available for new lease")
	waitReports(t, sim, ns, "ex", "BeforeLeaseHook: Running beforeLease hook",
		"BeforeLeaseHookFailed: beforeLease hook failed (on_failure=endLease): "+failed1, "Available: Available for new lease")
	if _, err := os.Stat(ran); err == nil {
		t.Error("the afterLease hook ran after a failed beforeLease hook")
	}
}

// afterLease endLease: transient AfterLeaseHookFailed, then Available; the next lease lands.
func TestAfterLeaseHookEndLease(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	startHooked(t, sim, ns, "ex", false, "  afterLease: {script: 'exit 1', onFailure: endLease}\n")
	lease(t, sim, ns, "l1")
	waitStatus(t, sim, ns, "ex", jsv1.ExporterStatusLeaseReady, "Ready for commands")
	release(t, sim, ns, "l1")
	waitStatus(t, sim, ns, "ex", jsv1.ExporterStatusAfterLeaseHookFailed, "afterLease hook failed (on_failure=endLease): "+failed1)
	// Not Available while failed: a lease taken now waits for the failure to pass.
	if _, err := sim.TakeLease(testCtx(t), ns, "l2", board, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitLeaseAssigned(testCtx(t), ns, "l2"); err != nil {
		t.Fatal(err)
	}
	waitReports(t, sim, ns, "ex", "LeaseReady: Ready for commands", "AfterLeaseHook: Running afterLease hooks",
		"AfterLeaseHookFailed: afterLease hook failed (on_failure=endLease): "+failed1, "Available: Available for new lease",
		"LeaseReady: Ready for commands")
}

// exitFailed waits for the Pod of an exporter that exited after a failed hook: Failed, its
// exporter container terminated with exit code 1 and the failure as its message, and the
// Exporter offline with its last report.
func exitFailed(t *testing.T, sim *Simulator, ns, name, hook string) {
	t.Helper()
	pod, err := sim.WaitPodPhase(testCtx(t), ns, name, corev1.PodFailed)
	if err != nil {
		t.Fatal(err)
	}
	cs := pod.Status.ContainerStatuses[0]
	want := hook + " hook failed (on_failure=exit, shutting down): " + failed1 + "\n"
	if term := cs.State.Terminated; term == nil || term.ExitCode != 1 || term.Reason != "Error" || term.Message != want {
		t.Errorf("exporter container %+v, want exit code 1 with %q", cs.State, want)
	}
	ex, err := sim.WaitExporter(testCtx(t), ns, name, func(e *jsv1.Exporter) bool {
		return offline(e) && !meta.IsStatusConditionTrue(e.Status.Conditions, jsv1.ExporterConditionRegistered)
	})
	if err != nil {
		t.Fatal(err)
	}
	if msg := "Exporter shutting down due to " + hook + " hook failure"; ex.Status.ExporterStatusValue != jsv1.ExporterStatusOffline || ex.Status.StatusMessage != msg {
		t.Errorf("exporter status %s %q, want Offline %q", ex.Status.ExporterStatusValue, ex.Status.StatusMessage, msg)
	}
}

// afterLease exit: the failure, Offline, then the process exits with code 1.
func TestAfterLeaseHookExit(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	startHooked(t, sim, ns, "ex", false, "  afterLease: {script: 'exit 1', onFailure: exit}\n")
	lease(t, sim, ns, "l1")
	waitStatus(t, sim, ns, "ex", jsv1.ExporterStatusLeaseReady, "Ready for commands")
	release(t, sim, ns, "l1")
	exitFailed(t, sim, ns, "ex", "afterLease")
	waitReports(t, sim, ns, "ex", "LeaseReady: Ready for commands", "AfterLeaseHook: Running afterLease hooks",
		"AfterLeaseHookFailed: afterLease hook failed (on_failure=exit, shutting down): "+failed1,
		"Offline: Exporter shutting down due to afterLease hook failure")
}

// beforeLease exit: the failure and Offline at once; the process keeps its lease until the
// lease ends (no afterLease hook), then exits with code 1.
func TestBeforeLeaseHookExit(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	startHooked(t, sim, ns, "ex", false, `  beforeLease: {script: 'exit 1', onFailure: exit}
  afterLease: {script: 'true'}
`)
	lease(t, sim, ns, "l1")
	waitStatus(t, sim, ns, "ex", jsv1.ExporterStatusOffline, "Exporter shutting down due to beforeLease hook failure")
	consistently(t, 1500*time.Millisecond, func() error {
		if p := getObj(t, podObj(ns, "ex")); p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("pod %s while its lease is held", p.Status.Phase)
		}
		if l := getObj(t, leaseObj(ns, "l1")); l.Status.Ended {
			return fmt.Errorf("the lease ended by itself")
		}
		return nil
	})
	release(t, sim, ns, "l1")
	exitFailed(t, sim, ns, "ex", "beforeLease")
	waitReports(t, sim, ns, "ex", "BeforeLeaseHook: Running beforeLease hook",
		"BeforeLeaseHookFailed: beforeLease hook failed (on_failure=exit, shutting down): "+failed1,
		"Offline: Exporter shutting down due to beforeLease hook failure")
}

// Under exitOnLeaseEnd the afterLease hook runs before the process exits (code 0).
func TestAfterLeaseHookBeforeExitOnLeaseEnd(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ran := filepath.Join(t.TempDir(), "after")
	startHooked(t, sim, ns, "ex", true, fmt.Sprintf("  afterLease: {script: 'sleep 1; touch %s'}\n", ran))
	lease(t, sim, ns, "l1")
	release(t, sim, ns, "l1")
	waitStatus(t, sim, ns, "ex", jsv1.ExporterStatusAfterLeaseHook, "Running afterLease hooks")
	pod, err := sim.WaitPodPhase(testCtx(t), ns, "ex", corev1.PodSucceeded)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ran); err != nil {
		t.Errorf("the Pod completed before its afterLease hook was done: %v", err)
	}
	if term := pod.Status.ContainerStatuses[0].State.Terminated; term == nil || term.ExitCode != 0 {
		t.Errorf("exporter container %+v", pod.Status.ContainerStatuses[0].State)
	}
	if r := reports(sim, ns, "ex"); strings.Contains(strings.Join(r, "\n"), "Available") {
		t.Errorf("an exiting exporter reported %v", r)
	}
}

// A lease that ends while its beforeLease hook runs: no LeaseReady; the afterLease hook runs
// once the beforeLease hook is done.
func TestLeaseEndsDuringBeforeLeaseHook(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ran := filepath.Join(t.TempDir(), "ran")
	startHooked(t, sim, ns, "ex", false, fmt.Sprintf(`  beforeLease: {script: 'sleep 1; echo before >> %[1]s'}
  afterLease: {script: 'echo after >> %[1]s'}
`, ran))
	lease(t, sim, ns, "l1")
	waitStatus(t, sim, ns, "ex", jsv1.ExporterStatusBeforeLeaseHook, "Running beforeLease hook")
	release(t, sim, ns, "l1")
	waitStatus(t, sim, ns, "ex", jsv1.ExporterStatusAvailable, "Available for new lease")
	waitReports(t, sim, ns, "ex", "BeforeLeaseHook: Running beforeLease hook",
		"AfterLeaseHook: Running afterLease hooks", "Available: Available for new lease")
	if b, err := os.ReadFile(ran); err != nil || string(b) != "before\nafter\n" {
		t.Errorf("the hooks wrote %q (%v), want the beforeLease hook done before the afterLease hook", b, err)
	}
}
