package main

import (
	"bytes"
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

// binDir holds the runtime and jumpstarter-exec stand-ins, built by TestMain.
var binDir string

func TestMain(m *testing.M) {
	var err error
	if binDir, err = os.MkdirTemp("", "runtime-test-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for name, pkg := range map[string]string{"runtime": ".", "jumpstarter-exec": "../jumpstarterexec"} {
		build := exec.Command("go", "build", "-o", filepath.Join(binDir, name), pkg)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(binDir)
	os.Exit(code)
}

func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

func TestServesLauncherUntilSIGTERM(t *testing.T) {
	socket := filepath.Join(t.TempDir(), "launcher.sock")
	cmd := exec.Command(filepath.Join(binDir, "runtime"))
	cmd.Env = append(os.Environ(), launcher.EnvSocket+"="+socket)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	reply, err := launcher.AskRetrying(socket, launcher.Ping, 10*time.Second)
	if err != nil || reply != "PONG qemu-runtime-standin" {
		t.Fatalf("PING: %q, %v\n%s", reply, err, &stderr)
	}
	exe := exec.Command(filepath.Join(binDir, "jumpstarter-exec"))
	exe.Env = append(os.Environ(), launcher.EnvSocket+"="+socket)
	out, err := exe.Output()
	if err != nil || !strings.HasPrefix(string(out), "OK ") {
		t.Errorf("jumpstarter-exec: %q, %v", out, err)
	}
	exe = exec.Command(filepath.Join(binDir, "jumpstarter-exec"), "REBOOT", "now")
	exe.Env = append(os.Environ(), launcher.EnvSocket+"="+socket)
	out, err = exe.Output()
	if exitCode(t, err) != 1 || string(out) != "ERR unknown request REBOOT\n" {
		t.Errorf("jumpstarter-exec REBOOT: %q, %v", out, err)
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(t, cmd.Wait()); code != 0 {
		t.Errorf("exit status after SIGTERM %d\n%s", code, &stderr)
	}
	if _, err := os.Stat(socket); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("socket left after SIGTERM: %v", err)
	}
}

func TestExitCodeIsTheCrashImage(t *testing.T) {
	termLog := filepath.Join(t.TempDir(), "termination-log")
	if err := os.WriteFile(termLog, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(filepath.Join(binDir, "runtime"), "--exit-code", "3")
	cmd.Env = append(os.Environ(), termlog.EnvPath+"="+termLog, launcher.EnvSocket+"="+filepath.Join(t.TempDir(), "s"))
	out, err := cmd.CombinedOutput()
	const want = "exiting with status 3 as configured (--exit-code: the crash image)"
	if code := exitCode(t, err); code != 3 || string(out) != "qemu-runtime: "+want+"\n" {
		t.Errorf("exit %d, output %q", code, out)
	}
	if b, _ := os.ReadFile(termLog); string(b) != want+"\n" {
		t.Errorf("termination log %q", b)
	}
}

func TestRequireKVM(t *testing.T) {
	cmd := exec.Command(filepath.Join(binDir, "runtime"), "--require-kvm")
	cmd.Env = append(os.Environ(), launcher.EnvSocket+"="+filepath.Join(t.TempDir(), "s"))
	if os.Geteuid() == 0 {
		// As the Pod's user, for whom a host's /dev/kvm (root, 0600 or 0660) does not open.
		if fi, err := os.Stat("/dev/kvm"); err == nil && fi.Mode().Perm()&0o006 == 0o006 {
			t.Skip("/dev/kvm is open to all on this host")
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65532, Gid: 65532}}
		if err := os.Chmod(binDir, 0o755); err != nil {
			t.Fatal(err)
		}
	} else if f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0); err == nil {
		f.Close()
		t.Skip("/dev/kvm opens for this user")
	}
	out, err := cmd.CombinedOutput()
	if code := exitCode(t, err); code != 1 || !strings.HasPrefix(string(out), "qemu-runtime: KVM required (--require-kvm): open /dev/kvm: ") ||
		!strings.HasSuffix(string(out), "(is a devices.kubevirt.io/kvm device allocated?)\n") {
		t.Errorf("exit %d, output %q", code, out)
	}
}
