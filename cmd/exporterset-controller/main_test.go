package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/exporterset/exporterset/internal/testenv"
)

var (
	env    *testenv.Env
	binary string // the built exporterset-controller
)

// TestMain builds the binary once and starts one API server for the package: the tests run
// the real binary as a subprocess, as an operator would.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "exporterset-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "exporterset-controller")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "building the binary: %v\n", err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		e, err := testenv.Start()
		if err != nil {
			fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
			return 1
		}
		defer func() { _ = e.Stop() }()
		env = e
		return m.Run()
	}()
	os.Exit(code)
}

// proc is a running binary whose combined output is captured.
type proc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan error
}

func (p *proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

func (p *proc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

func start(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(binary, args...), done: make(chan error, 1)}
	p.cmd.Stdout, p.cmd.Stderr = p, p
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("output of %v:\n%s", args, tail(p.output(), 60))
		}
	})
	return p
}

// stop sends SIGTERM and waits up to grace for a clean exit.
func (p *proc) stop(t *testing.T, grace time.Duration) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("exited with %v after SIGTERM", err)
		}
	case <-time.After(grace):
		t.Fatalf("did not exit within %s of SIGTERM", grace)
	}
}

func tail(s string, lines int) string {
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

func kubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("timed out after %s waiting for %s: %s", timeout, what, last)
}

var ctx = context.Background()
