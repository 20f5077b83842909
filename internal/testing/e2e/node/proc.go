package node

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// daemon is one long-running process of the node (containerd, the kubelet, ...), started in
// its own process group with its output in a log file, so that stopping it also stops what it
// forked and a failed run leaves the log behind.
type daemon struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// startDaemon starts bin with args, logging to logDir/name.log.
func startDaemon(logDir, name, bin string, args []string, env []string) (*daemon, error) {
	logPath := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	d := &daemon{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		d.err = cmd.Wait()
		_ = f.Close()
		close(d.done)
	}()
	return d, nil
}

// exited reports whether the process has ended, and how.
func (d *daemon) exited() (bool, error) {
	select {
	case <-d.done:
		return true, d.err
	default:
		return false, nil
	}
}

// stop sends SIGTERM to the process group, then SIGKILL after grace.
func (d *daemon) stop(grace time.Duration) {
	if d == nil {
		return
	}
	if done, _ := d.exited(); done {
		return
	}
	_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(grace):
		_ = syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.done
	}
}

// waitFor polls cond every interval until it holds or timeout passes; the error names what
// was awaited and the last reason cond gave.
func waitFor(timeout, interval time.Duration, what string, cond func() (bool, string)) error {
	deadline := time.Now().Add(timeout)
	last := ""
	for {
		ok, why := cond()
		if ok {
			return nil
		}
		last = why
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s: %s", timeout, what, last)
		}
		time.Sleep(interval)
	}
}

// errDaemonExited is returned while waiting on a daemon that has already died.
var errDaemonExited = errors.New("exited")

// alive returns a reason when d has exited, for the waits that depend on it.
func (d *daemon) alive() error {
	if done, err := d.exited(); done {
		return fmt.Errorf("%s %w (%v); see %s", d.name, errDaemonExited, err, d.log)
	}
	return nil
}
