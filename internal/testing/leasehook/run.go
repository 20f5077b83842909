package leasehook

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/exporterset/exporterset/internal/exportercfg"
)

// killGrace is how long a hook that timed out has after SIGTERM before it is killed
// (upstream's exporter waits 5 s).
const killGrace = 5 * time.Second

// Command is how h runs, as upstream's exporter starts it: a script that is one line naming
// an existing file runs as [interpreter, file] (a .py file with python3 unless exec says
// otherwise, anything else with /bin/sh); any other script runs as [interpreter, -c, script]
// with /bin/sh by default.
func Command(h *exportercfg.Hook) []string {
	script := strings.TrimSpace(h.Script)
	isFile := !strings.Contains(script, "\n") && isRegular(script)
	interp := h.Exec
	if interp == "" {
		interp = "/bin/sh"
		if isFile && strings.EqualFold(filepath.Ext(script), ".py") {
			interp = "python3" // upstream: the exporter's own Python
		}
	}
	if isFile {
		return []string{interp, script}
	}
	return []string{interp, "-c", h.Script}
}

func isRegular(path string) bool {
	if path == "" {
		return false
	}
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular()
}

// Env is the environment upstream's exporter adds for a hook, but JUMPSTARTER_HOST (the
// session's socket, which only a real exporter has).
func Env(lease, client string) []string {
	return []string{
		"LEASE_NAME=" + lease, "CLIENT_NAME=" + client, "JMP_DRIVERS_ALLOW=UNSAFE",
		"TERM=dumb", "DEBIAN_FRONTEND=noninteractive", "GIT_TERMINAL_PROMPT=0",
	}
}

// Run runs h to its end or its timeout and returns "" when it succeeded, else upstream's
// words for the failure. A blank script succeeds without running anything (upstream skips
// it). env is added to the process's environment; out, when not nil, gets the hook's output.
// The hook runs in a process group of its own, so a timeout ends its children too.
func Run(ctx context.Context, h *exportercfg.Hook, env []string, out *strings.Builder) string {
	if strings.TrimSpace(h.Script) == "" {
		return ""
	}
	argv := Command(h)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if out != nil {
		cmd.Stdout, cmd.Stderr = out, out
	}
	if err := cmd.Start(); err != nil {
		return fmt.Sprintf("Error executing hook: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timeout := time.Duration(h.TimeoutSeconds()) * time.Second
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case err := <-done:
		return exitFailure(err)
	case <-ctx.Done():
		stop(cmd, done)
		return fmt.Sprintf("Error executing hook: %v", ctx.Err())
	case <-timer.C:
		stop(cmd, done)
		return fmt.Sprintf("Hook timed out after %d seconds", h.TimeoutSeconds())
	}
}

// stop ends a hook's process group: SIGTERM, then SIGKILL after killGrace.
func stop(cmd *exec.Cmd, done <-chan error) {
	pgid := -cmd.Process.Pid
	_ = syscall.Kill(pgid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(killGrace):
		_ = syscall.Kill(pgid, syscall.SIGKILL)
		<-done
	}
}

func exitFailure(err error) string {
	if err == nil {
		return ""
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			code = -int(ws.Signal()) // as Python's returncode shows a signal
		}
		return fmt.Sprintf("Hook failed with exit code %d", code)
	}
	return fmt.Sprintf("Error executing hook: %v", err)
}
