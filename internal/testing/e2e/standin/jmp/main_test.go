package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exporterset/exporterset/internal/testing/e2e/standin/launcher"
	"github.com/exporterset/exporterset/internal/testing/e2e/standin/termlog"
)

// jmpBin is the stand-in built once by TestMain: the tests run it as a process, as the
// container runtime does.
var jmpBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "jmp-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	jmpBin = filepath.Join(dir, "jmp")
	build := exec.Command("go", "build", "-o", jmpBin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func config(exitOnLeaseEnd bool) string {
	ca := base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n"))
	return fmt.Sprintf(`apiVersion: jumpstarter.dev/v1alpha1
kind: ExporterConfig
metadata: {name: pool-abcde, namespace: lab}
endpoint: 127.0.0.1:8082
tls: {ca: %s, insecure: false}
token: tok
exitOnLeaseEnd: %t
export:
  qemu: {type: jumpstarter_driver_qemu.driver.Qemu, config: {arch: x86_64}}
`, ca, exitOnLeaseEnd)
}

// pod is a temp layout like the QEMU Pod's: the config file, /shared with the launcher
// socket (served by the test) and jumpstarter-exec, and a termination log.
type pod struct {
	config, shared, socket, termLog string
	// nonRoot runs jmp as UID/GID 65532 when the test runs as root, as the Pod does.
	nonRoot bool
}

func newPod(t *testing.T, cfg string, serve, withExec bool) pod {
	t.Helper()
	dir := t.TempDir()
	p := pod{config: filepath.Join(dir, "config.yaml"), shared: filepath.Join(dir, "shared"), termLog: filepath.Join(dir, "termination-log")}
	p.socket = filepath.Join(p.shared, "launcher.sock")
	for _, err := range []error{
		os.WriteFile(p.config, []byte(cfg), 0o440),
		os.Mkdir(p.shared, 0o777),
		os.WriteFile(p.termLog, nil, 0o666),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if withExec {
		if err := os.WriteFile(filepath.Join(p.shared, "jumpstarter-exec"), []byte("#!/bin/true\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if serve {
		ln, err := launcher.Listen(p.socket)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go launcher.Serve(ln, func(string) string { return "PONG test" })
	}
	return p
}

func (p pod) start(t *testing.T, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(jmpBin, append([]string{"run", "--exporter-config", p.config}, args...)...)
	cmd.Env = append(os.Environ(), launcher.EnvSocket+"="+p.socket, termlog.EnvPath+"="+p.termLog)
	if p.nonRoot && os.Geteuid() == 0 {
		// Let the user through the temp directories (0700) to the binary and the files.
		for _, dir := range []string{filepath.Dir(jmpBin), filepath.Dir(p.config), filepath.Dir(filepath.Dir(p.config))} {
			if err := os.Chmod(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chmod(p.termLog, 0o666); err != nil {
			t.Fatal(err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, &stderr
}

// wait waits for the process to exit and returns its exit status.
func wait(t *testing.T, cmd *exec.Cmd, within time.Duration) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(within):
		t.Fatalf("jmp still running after %s", within)
		return -1
	}
}

func TestRunFails(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(p *pod)
		cfg   string
		serve bool
		exec  bool
		want  string // the one-line reason, after "jmp: " on stderr and alone in the log
	}{
		{name: "missing file", setup: func(p *pod) { os.Remove(p.config) }, serve: true, exec: true,
			want: "exporter config {config}: open {config}: no such file or directory"},
		// As root, jmp runs as 65532 for this case (root would read the file anyway).
		{name: "unreadable file", setup: func(p *pod) { os.Chmod(p.config, 0); p.nonRoot = true }, serve: true, exec: true,
			want: "exporter config {config}: open {config}: permission denied"},
		{name: "not yaml", cfg: "endpoint: [", serve: true, exec: true,
			want: "exporter config {config}: not a YAML ExporterConfig: error converting YAML to JSON: yaml: line 1: did not find expected node content"},
		{name: "no token", cfg: strings.Replace(config(true), "token: tok\n", "", 1), serve: true, exec: true,
			want: "exporter config {config}: token is empty: the exporter cannot authenticate"},
		{name: "no launcher", exec: true,
			want: "launcher socket {socket} (JUMPSTARTER_LAUNCHER_SOCKET) does not answer after 300ms: dial unix {socket}: connect: no such file or directory"},
		{name: "no jumpstarter-exec", serve: true,
			want: "launcher binary: stat {shared}/jumpstarter-exec: no such file or directory (copied by the copy-jumpstarter-exec init container)"},
		{name: "jumpstarter-exec not executable", serve: true, exec: true,
			setup: func(p *pod) { os.Chmod(filepath.Join(p.shared, "jumpstarter-exec"), 0o644) },
			want:  "launcher binary {shared}/jumpstarter-exec is not an executable file (mode -rw-r--r--)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if cfg == "" {
				cfg = config(true)
			}
			p := newPod(t, cfg, tc.serve, tc.exec)
			if tc.setup != nil {
				tc.setup(&p)
			}
			want := strings.NewReplacer("{config}", p.config, "{socket}", p.socket, "{shared}", p.shared).Replace(tc.want)
			cmd, stderr := p.start(t, "--launcher-wait", "300ms")
			if code := wait(t, cmd, 10*time.Second); code != 1 {
				t.Errorf("exit status %d, want 1", code)
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if got := lines[len(lines)-1]; got != "jmp: "+want {
				t.Errorf("stderr:\n%s\nwant\njmp: %s", got, want)
			}
			if got, _ := os.ReadFile(p.termLog); string(got) != want+"\n" {
				t.Errorf("termination log:\n%q\nwant\n%q", got, want+"\n")
			}
		})
	}
}

// waitFor polls stderr until it holds s.
func waitFor(t *testing.T, stderr *bytes.Buffer, s string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), s) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in stderr:\n%s", s, stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A simulated core (jumpsim) never dials: it tells the end of a lease with `jmp
// lease-ended`, and the test CA here verifies nothing, so the exporter keeps retrying meanwhile.
func TestRunExitsOnLeaseEndedSignal(t *testing.T) {
	p := newPod(t, config(true), true, true)
	cmd, stderr := p.start(t)
	waitFor(t, stderr, "exporter lab/pool-abcde: connecting to the controller at 127.0.0.1:8082 (drivers: qemu; exitOnLeaseEnd: true)")
	out, err := exec.Command(jmpBin, "lease-ended", "--pid", fmt.Sprint(cmd.Process.Pid)).CombinedOutput()
	if err != nil {
		t.Fatalf("jmp lease-ended: %v: %s", err, out)
	}
	if code := wait(t, cmd, 10*time.Second); code != 0 {
		t.Errorf("exit status %d, want 0\n%s", code, stderr)
	}
	if !strings.Contains(stderr.String(), "lease ended, exitOnLeaseEnd: exiting") {
		t.Errorf("stderr:\n%s", stderr)
	}
	if got, _ := os.ReadFile(p.termLog); len(got) != 0 {
		t.Errorf("termination log after a clean exit: %q", got)
	}
}

func TestRunStaysAfterLeaseEndedSignalWithoutExitOnLeaseEnd(t *testing.T) {
	p := newPod(t, config(false), true, true)
	cmd, stderr := p.start(t)
	waitFor(t, stderr, "connecting to the controller")
	if err := cmd.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	waitFor(t, stderr, "lease ended; staying for the next lease (exitOnLeaseEnd is false)")
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("jmp gone after a lease without exitOnLeaseEnd: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(t, cmd, 10*time.Second); code != 0 {
		t.Errorf("exit status after SIGTERM %d, want 0\n%s", code, stderr)
	}
}

func TestLeaseEndedNoSuchProcess(t *testing.T) {
	// A pid that cannot exist (beyond pid_max).
	out, err := exec.Command(jmpBin, "lease-ended", "--pid", "99999999").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(string(out), "signal process 99999999: no such process") {
		t.Errorf("lease-ended on no process: %v: %s", err, out)
	}
}
