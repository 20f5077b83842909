// Package testproc runs a command's real binary as a subprocess of a test, as an operator
// would: build it once, start it with its output captured, wait for what it should do, stop it
// with SIGTERM. Both commands' end-to-end tests use it.
package testproc

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Build builds the main package in the working directory (a test's package directory) into a
// new temporary directory, as name. The caller removes dir when done.
func Build(name string) (binary, dir string, err error) {
	dir, err = os.MkdirTemp("", name+"-e2e-")
	if err != nil {
		return "", "", err
	}
	binary = filepath.Join(dir, name)
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		_ = os.RemoveAll(dir)
		return "", "", fmt.Errorf("building %s: %w", name, err)
	}
	return binary, dir, nil
}

// Proc is a running binary whose combined output is captured.
type Proc struct {
	// Cmd is the running command.
	Cmd    *exec.Cmd
	mu     sync.Mutex
	out    bytes.Buffer
	done   chan error
	exited chan struct{} // closed once the process has exited
}

// Exited reports whether the process has exited (by itself, or stopped or killed).
func (p *Proc) Exited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Write collects the process's stdout and stderr.
func (p *Proc) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.Write(b)
}

// Output is everything the process printed so far.
func (p *Proc) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// Start starts binary with args. When the test ends the process is killed if still running,
// and a failed test logs the tail of its output.
func Start(t *testing.T, binary string, args ...string) *Proc {
	t.Helper()
	return StartCmd(t, exec.Command(binary, args...))
}

// StartCmd starts cmd (prepared by the caller: its environment, its argv[0]) as Start does.
func StartCmd(t *testing.T, cmd *exec.Cmd) *Proc {
	t.Helper()
	args := cmd.Args[1:]
	p := &Proc{Cmd: cmd, done: make(chan error, 1), exited: make(chan struct{})}
	p.Cmd.Stdout, p.Cmd.Stderr = p, p
	if err := p.Cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := p.Cmd.Wait()
		close(p.exited)
		p.done <- err
	}()
	t.Cleanup(func() {
		if p.Cmd.ProcessState == nil {
			_ = p.Cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("output of %v:\n%s", args, Tail(p.Output(), 60))
		}
	})
	return p
}

// Stop sends SIGTERM and fails the test unless the process exits cleanly within grace.
func (p *Proc) Stop(t *testing.T, grace time.Duration) {
	t.Helper()
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("exited with %v after SIGTERM", err)
		}
	case <-time.After(grace):
		t.Fatalf("did not exit within %s of SIGTERM", grace)
	}
}

// Kill kills the process (no chance to clean up, as a crash) and waits for it.
func (p *Proc) Kill() {
	_ = p.Cmd.Process.Kill()
	<-p.done
}

// Tail is the last lines of s.
func Tail(s string, lines int) string {
	parts := strings.Split(s, "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

// WaitFor polls cond until it holds, failing the test after timeout with what and cond's last
// message.
func WaitFor(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
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

// FreePort asks the kernel for a free TCP port on loopback, for a process about to be started
// that must be told its port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
