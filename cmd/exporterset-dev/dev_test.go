package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/exporterset/exporterset/internal/testing/testproc"
)

// The local environment end to end, as the README runs it: it starts its own control plane,
// reaches the sample's warm pool, serves a lease taken with the command it prints, and stops
// by itself.
func TestDevModeWarmPoolAndLease(t *testing.T) {
	state := t.TempDir()
	started := time.Now()
	p := testproc.Start(t, binary, "--exit-after", "60s", "--state-dir", state, "--refresh", "200ms")
	warm := regexp.MustCompile(`warm pool ready ([0-9.]+m?s) after start`)
	testproc.WaitFor(t, 90*time.Second, "the warm pool", func() (bool, string) {
		return warm.MatchString(p.Output()), testproc.Tail(p.Output(), 5)
	})
	t.Logf("dev: %s (wall clock from process start %s)", warm.FindString(p.Output()), time.Since(started).Round(100*time.Millisecond))
	for _, want := range []string{"kubeconfig: " + filepath.Join(state, "kubeconfig"), "kubectl --kubeconfig", "applied", "x86-64-pool"} {
		if !strings.Contains(p.Output(), want) {
			t.Errorf("dev output lacks %q", want)
		}
	}

	// The hint names this binary (not a `go run` build) and the state directory.
	hint := binary + " lease --state-dir " + state
	if !strings.Contains(p.Output(), "take a lease:   "+hint+"\n") {
		t.Errorf("the lease hint is not %q:\n%s", hint, testproc.Tail(p.Output(), 20))
	}
	out, err := exec.Command(binary, "lease", "--state-dir", state, "--wait", "30s").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "holds exporter") {
		t.Fatalf("lease: %v\n%s", err, out)
	}
	name := regexp.MustCompile(`lease (dev-lease-\S+) holds`).FindStringSubmatch(string(out))
	if name == nil {
		t.Fatalf("no lease name in %q", out)
	}
	testproc.WaitFor(t, 30*time.Second, "the pool to show the lease", func() (bool, string) {
		return strings.Contains(p.Output(), "leased=1"), testproc.Tail(p.Output(), 3)
	})
	if want := "release it with: " + hint + " --release " + name[1]; !strings.Contains(string(out), want) {
		t.Errorf("lease output lacks %q: %s", want, out)
	}
	out, err = exec.Command(binary, "lease", "--state-dir", state, "--release", name[1]).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "released lease") {
		t.Fatalf("lease --release: %v\n%s", err, out)
	}
	p.Stop(t, 30*time.Second)
	if !strings.Contains(p.Output(), "stopping the control plane") {
		t.Errorf("dev did not stop what it started:\n%s", testproc.Tail(p.Output(), 10))
	}
}
