package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// dev mode end to end, as the README runs it: it starts its own control plane, reaches the
// sample's warm pool, serves a lease taken with `dev lease`, and stops by itself.
func TestDevModeWarmPoolAndLease(t *testing.T) {
	state := t.TempDir()
	started := time.Now()
	p := start(t, "dev", "--exit-after", "60s", "--state-dir", state, "--refresh", "200ms")
	warm := regexp.MustCompile(`warm pool ready ([0-9.]+m?s) after start`)
	waitFor(t, 90*time.Second, "the warm pool", func() (bool, string) {
		return warm.MatchString(p.output()), tail(p.output(), 5)
	})
	t.Logf("dev: %s (wall clock from process start %s)", warm.FindString(p.output()), time.Since(started).Round(100*time.Millisecond))
	for _, want := range []string{"kubeconfig: " + filepath.Join(state, "kubeconfig"), "kubectl --kubeconfig", "applied", "x86-64-pool"} {
		if !strings.Contains(p.output(), want) {
			t.Errorf("dev output lacks %q", want)
		}
	}

	out, err := exec.Command(binary, "dev", "lease", "--state-dir", state, "--wait", "30s").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "holds exporter") {
		t.Fatalf("dev lease: %v\n%s", err, out)
	}
	name := regexp.MustCompile(`lease (dev-lease-\S+) holds`).FindStringSubmatch(string(out))
	if name == nil {
		t.Fatalf("no lease name in %q", out)
	}
	waitFor(t, 30*time.Second, "the pool to show the lease", func() (bool, string) {
		return strings.Contains(p.output(), "leased=1"), tail(p.output(), 3)
	})
	out, err = exec.Command(binary, "dev", "lease", "--state-dir", state, "--release", name[1]).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "released lease") {
		t.Fatalf("dev lease --release: %v\n%s", err, out)
	}
	p.stop(t, 30*time.Second)
	if !strings.Contains(p.output(), "stopping the control plane") {
		t.Errorf("dev did not stop what it started:\n%s", tail(p.output(), 10))
	}
}
