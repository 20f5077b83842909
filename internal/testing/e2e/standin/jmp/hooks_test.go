package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	pb "github.com/exporterset/exporterset/internal/testing/e2e/standin/jumpstarterpb"
)

const auth = " [Bearer tok Exporter lab/pool-abcde]"

func reportCall(status, msg string) string {
	return fmt.Sprintf("ReportStatus EXPORTER_STATUS_%s %q", status, msg) + auth
}

const fail1 = "Hook failed with exit code 1"

// Hooks that pass run around each lease, with the lease's name in their environment, and
// the exporter reports as upstream's does.
func TestHooksRunAroundLeases(t *testing.T) {
	c := startController(t)
	ran := filepath.Join(t.TempDir(), "ran")
	p := newPod(t, c.config(false)+fmt.Sprintf(`hooks:
  beforeLease: {script: 'echo before $LEASE_NAME $CLIENT_NAME >> %[1]s'}
  afterLease: {exec: /bin/sh, script: 'echo after $LEASE_NAME >> %[1]s', onFailure: exit}
`, ran), true, true)
	cmd, stderr := p.start(t)
	c.waitCalls(t, []string{callRegister, callAvailable, callStatus}, stderr)
	c.status <- lease("l1")
	c.status <- &pb.StatusResponse{}
	c.waitCalls(t, []string{callRegister, callAvailable, callStatus,
		reportCall("BEFORE_LEASE_HOOK", "Running beforeLease hook"), reportCall("LEASE_READY", "Ready for commands"),
		reportCall("AFTER_LEASE_HOOK", "Running afterLease hooks"), reportCall("AVAILABLE", "Available for new lease")}, stderr)
	if b, err := os.ReadFile(ran); err != nil || string(b) != "before l1 alice\nafter l1\n" {
		t.Errorf("the hooks wrote %q (%v)", b, err)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := wait(t, cmd, 10*time.Second); code != 0 {
		t.Errorf("exit status %d\n%s", code, stderr)
	}
}

// onFailure endLease before a lease: the failure, then a second later the request to
// release the lease; no afterLease hook; available again once the lease ended.
func TestBeforeLeaseHookEndsLease(t *testing.T) {
	c := startController(t)
	ran := filepath.Join(t.TempDir(), "after")
	p := newPod(t, c.config(false)+fmt.Sprintf(`hooks:
  beforeLease: {script: 'exit 1', onFailure: endLease}
  afterLease: {script: 'touch %s'}
`, ran), true, true)
	_, stderr := p.start(t)
	c.waitCalls(t, []string{callRegister, callAvailable, callStatus}, stderr)
	c.status <- lease("l1")
	failed := reportCall("BEFORE_LEASE_HOOK_FAILED", "beforeLease hook failed (on_failure=endLease): "+fail1)
	start := time.Now()
	c.waitCalls(t, []string{callRegister, callAvailable, callStatus, reportCall("BEFORE_LEASE_HOOK", "Running beforeLease hook"),
		failed, strings.TrimSuffix(failed, auth) + " release" + auth}, stderr)
	if d := time.Since(start); d < 900*time.Millisecond {
		t.Errorf("release asked %s after the lease began, want about a second after the failure", d)
	}
	c.status <- &pb.StatusResponse{}
	c.waitCalls(t, []string{callRegister, callAvailable, callStatus, reportCall("BEFORE_LEASE_HOOK", "Running beforeLease hook"),
		failed, strings.TrimSuffix(failed, auth) + " release" + auth, reportCall("AVAILABLE", "Available for new lease")}, stderr)
	if _, err := os.Stat(ran); err == nil {
		t.Error("the afterLease hook ran after a failed beforeLease hook")
	}
}

// onFailure endLease after a lease is transient: the exporter takes the next lease, and a
// hook that times out fails the same way.
func TestAfterLeaseHookEndLeaseIsTransient(t *testing.T) {
	c := startController(t)
	flag := filepath.Join(t.TempDir(), "second")
	// The first run exits 1, the second times out.
	p := newPod(t, c.config(false)+fmt.Sprintf(`hooks:
  afterLease: {script: 'if [ -e %[1]s ]; then sleep 10; else touch %[1]s; exit 1; fi', timeout: 1, onFailure: endLease}
`, flag), true, true)
	_, stderr := p.start(t)
	c.waitCalls(t, []string{callRegister, callAvailable, callStatus}, stderr)
	c.status <- lease("l1")
	c.status <- &pb.StatusResponse{}
	first := []string{callRegister, callAvailable, callStatus, reportCall("LEASE_READY", "Ready for commands"),
		reportCall("AFTER_LEASE_HOOK", "Running afterLease hooks"),
		reportCall("AFTER_LEASE_HOOK_FAILED", "afterLease hook failed (on_failure=endLease): "+fail1),
		reportCall("AVAILABLE", "Available for new lease")}
	c.waitCalls(t, first, stderr)
	c.status <- lease("l2")
	c.status <- &pb.StatusResponse{}
	c.waitCalls(t, append(first, reportCall("LEASE_READY", "Ready for commands"), reportCall("AFTER_LEASE_HOOK", "Running afterLease hooks"),
		reportCall("AFTER_LEASE_HOOK_FAILED", "afterLease hook failed (on_failure=endLease): Hook timed out after 1 seconds"),
		reportCall("AVAILABLE", "Available for new lease")), stderr)
}

// onFailure exit after a lease: the failure, Offline, Unregister, exit 1 with the failure as
// the termination message.
func TestAfterLeaseHookExits(t *testing.T) {
	c := startController(t)
	p := newPod(t, c.config(true)+"hooks:\n  afterLease: {script: 'exit 1', onFailure: exit}\n", true, true)
	cmd, stderr := p.start(t)
	c.waitCalls(t, []string{callRegister, callAvailable, callStatus}, stderr)
	c.status <- lease("l1")
	c.status <- &pb.StatusResponse{}
	if code := wait(t, cmd, 10*time.Second); code != 1 {
		t.Errorf("exit status %d, want 1\n%s", code, stderr)
	}
	msg := "afterLease hook failed (on_failure=exit, shutting down): " + fail1
	c.waitCalls(t, []string{callRegister, callAvailable, callStatus, callReady,
		reportCall("AFTER_LEASE_HOOK", "Running afterLease hooks"), reportCall("AFTER_LEASE_HOOK_FAILED", msg),
		reportCall("OFFLINE", "Exporter shutting down due to afterLease hook failure"), "Unregister " + msg + auth}, stderr)
	if got, _ := os.ReadFile(p.termLog); string(got) != msg+"\n" {
		t.Errorf("termination log %q, want %q", got, msg+"\n")
	}
}

// onFailure exit before a lease: the failure and Offline at once; the exporter keeps its
// lease until it ends, then unregisters and exits 1.
func TestBeforeLeaseHookExits(t *testing.T) {
	c := startController(t)
	p := newPod(t, c.config(false)+"hooks:\n  beforeLease: {script: 'exit 1', onFailure: exit}\n  afterLease: {script: 'true'}\n", true, true)
	cmd, stderr := p.start(t)
	c.waitCalls(t, []string{callRegister, callAvailable, callStatus}, stderr)
	c.status <- lease("l1")
	msg := "beforeLease hook failed (on_failure=exit, shutting down): " + fail1
	calls := []string{callRegister, callAvailable, callStatus, reportCall("BEFORE_LEASE_HOOK", "Running beforeLease hook"),
		reportCall("BEFORE_LEASE_HOOK_FAILED", msg), reportCall("OFFLINE", "Exporter shutting down due to beforeLease hook failure")}
	c.waitCalls(t, calls, stderr)
	time.Sleep(500 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("exited before its lease ended: %v\n%s", err, stderr)
	}
	c.status <- &pb.StatusResponse{}
	if code := wait(t, cmd, 10*time.Second); code != 1 {
		t.Errorf("exit status %d, want 1\n%s", code, stderr)
	}
	c.waitCalls(t, append(calls, "Unregister "+msg+auth), stderr)
}
