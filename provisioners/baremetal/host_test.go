package baremetal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/exporterset/exporterset/provisioner"
)

// TestMachineLocal runs the host scripts on this machine through localRunner (the same
// quoted `sh -c` an SSH host gets), so the lifecycle is tested even where the lab cannot run.
func TestMachineLocal(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("needs setsid (Debian package util-linux): ", err)
	}
	dir := t.TempDir()
	fake := writeFakeQEMU(t, dir)
	root := filepath.Join(dir, "root with 'quotes'")
	m := NewMachine("local", localRunner{}, root)
	m.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	ref := InstanceRef{Namespace: "ns", Set: "set", Name: "one", UID: "u1"}
	ctx := context.Background()
	t.Cleanup(func() { _ = m.Stop(context.Background(), ref) })

	if st, err := m.Observe(ctx, ref); err != nil || st.Phase != PhaseGone {
		t.Fatalf("before Create: %+v, %v", st, err)
	}
	spec := LaunchSpec{InstanceRef: ref, Binary: fake, ExtraArgs: []string{"-m", "64"},
		ExporterCommand: []string{"sh", "-c", "exec sleep 300", "exporter"}, Config: []byte("token: t\n")}
	if err := m.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	st := waitPhase(t, m, ref, PhaseRunning)
	if st.Meta == nil || !st.Meta.Created.Equal(m.now()) || st.Meta.UID != "u1" {
		t.Errorf("meta %+v", st.Meta)
	}
	idir, _ := m.Dir(ref)
	if want := filepath.Join(root, "ns_set", "one"); idir != want {
		t.Errorf("Dir = %q, want %q", idir, want)
	}
	checkMode(t, idir, 0o700)
	checkMode(t, filepath.Join(idir, "config.yaml"), 0o600)
	argv, err := os.ReadFile(filepath.Join(idir, "qemu-argv"))
	if err != nil {
		t.Fatal(err)
	}
	want := "-name\x00one\x00-display\x00none\x00-monitor\x00none\x00-qmp\x00unix:qmp.sock,server=on,wait=off\x00-accel\x00tcg\x00-m\x0064\x00"
	if string(argv) != want {
		t.Errorf("QEMU argv %q, want %q", argv, want)
	}
	qpid, epid := groupLeader(t, idir, "qemu"), groupLeader(t, idir, "exporter")

	// Kill QEMU behind the package's back: the instance is exited, not running.
	if err := syscall.Kill(-qpid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	st = waitPhase(t, m, ref, PhaseExited)
	if !strings.HasPrefix(st.Message, "qemu exited") || st.QEMUExit != nil || st.ExporterExit != nil {
		t.Errorf("status %+v, want QEMU exited without a status (killed with its wrapper)", st)
	}
	// Create again restarts the exited instance.
	if err := m.Create(ctx, spec); err != nil {
		t.Fatal(err)
	}
	waitPhase(t, m, ref, PhaseRunning)
	q2, e2 := groupLeader(t, idir, "qemu"), groupLeader(t, idir, "exporter")
	if q2 == qpid {
		t.Errorf("QEMU was not restarted")
	}
	inv, err := m.Inventory(ctx)
	if err != nil || len(inv) != 1 || inv[0].Instance != "one" || inv[0].Dir != idir {
		t.Fatalf("Inventory = %+v, %v", inv, err)
	}
	if err := m.Stop(ctx, ref); err != nil {
		t.Fatal(err)
	}
	checkGone(t, idir, qpid, epid, q2, e2)
	if _, err := os.Stat(filepath.Dir(idir)); !os.IsNotExist(err) {
		t.Errorf("Stop left the empty set directory: %v", err)
	}
}

func TestMachineRefusesBadInput(t *testing.T) {
	m := NewMachine("local", localRunner{}, "/var/lib/exporterset")
	for _, ref := range []InstanceRef{
		{Namespace: "ns", Set: "set", Name: "../../etc"},
		{Namespace: "n_s", Set: "set", Name: "a"},
		{Namespace: "ns", Set: "", Name: "a"},
		{Namespace: "ns", Set: "s", Name: "-rf"},
		{Namespace: "ns", Set: "s", Name: "a", UID: "x\ny"},
	} {
		if _, err := m.Dir(ref); err == nil {
			t.Errorf("Dir(%+v) accepted", ref)
		}
		if err := m.Stop(context.Background(), ref); err == nil {
			t.Errorf("Stop(%+v) accepted", ref)
		}
	}
	for _, root := range []string{"/", "rel", "/a/../b", ""} {
		if _, err := NewMachine("local", localRunner{}, root).Dir(InstanceRef{Namespace: "ns", Set: "s", Name: "a"}); err == nil {
			t.Errorf("root %q accepted", root)
		}
	}
}

// TestMachineExitStatus checks, through local sh, that the host records each process's exit
// status: 0 and 3 as the exporter's own, none when its group is killed (even over a stale
// status file), and that the stop script still waits out an exporter's graceful shutdown.
func TestMachineExitStatus(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("needs setsid (Debian package util-linux): ", err)
	}
	dir := t.TempDir()
	fake := writeFakeQEMU(t, dir)
	// stale, when set, plants an exporter.rc of 0 in the directory the prepare script made,
	// as a status left by an earlier process would be.
	var stale bool
	m := NewMachine("local", hookRunner{after: func(script string, args []string) {
		if script == "prepare" && stale {
			if err := os.WriteFile(filepath.Join(args[0], "exporter.rc"), []byte("0\n"), 0o600); err != nil {
				t.Error(err)
			}
		}
	}}, filepath.Join(dir, "root"))
	h := Host{Name: "local"}
	ctx := context.Background()
	start := func(name string, exporter ...string) (InstanceRef, string) {
		t.Helper()
		ref := InstanceRef{Namespace: "ns", Set: "set", Name: name, UID: "u-" + name}
		t.Cleanup(func() { _ = m.Stop(context.Background(), ref) })
		if err := m.Create(ctx, LaunchSpec{InstanceRef: ref, Binary: fake, ExporterCommand: exporter, Config: []byte("x")}); err != nil {
			t.Fatal(err)
		}
		idir, _ := m.Dir(ref)
		return ref, idir
	}

	t.Run("MissingProgram", func(t *testing.T) {
		ref := InstanceRef{Namespace: "ns", Set: "set", Name: "missing", UID: "u-missing"}
		err := m.Create(ctx, LaunchSpec{InstanceRef: ref, Binary: fake, ExporterCommand: []string{"no-such-exporter"}, Config: []byte("x")})
		var ce *CommandError
		if !errors.As(err, &ce) || ce.ExitStatus != 127 || ce.Command != "spawn-exporter" || !strings.Contains(ce.Stderr, "no-such-exporter") {
			t.Fatalf("Create with a missing exporter: %v, want spawn-exporter failing with 127", err)
		}
		if st, err := m.Observe(ctx, ref); err != nil || st.Phase != PhaseGone {
			t.Errorf("after the failed spawn: %+v, %v; want Gone", st, err)
		}
	})

	t.Run("ExitZero", func(t *testing.T) {
		ref, _ := start("zero", "sh", "-c", "echo lease over", "exporter")
		st := waitPhase(t, m, ref, PhaseExited)
		if st.ExporterExit == nil || *st.ExporterExit != 0 || st.QEMUExit != nil || !strings.Contains(st.Message, "exporter exited with status 0") {
			t.Errorf("status %+v, want the exporter's status 0 and QEMU running", st)
		}
		if es := stateOf(h, ref, st); es.Phase != provisioner.ExternalExited || es.Reason != ReasonExporterExited || !strings.Contains(es.Message, `lab host "local"`) {
			t.Errorf("external state %+v, want Exited naming the host", es)
		}
	})

	t.Run("ExitThree", func(t *testing.T) {
		ref, _ := start("three", "sh", "-c", "echo broken >&2; exit 3", "exporter")
		st := waitPhase(t, m, ref, PhaseExited)
		if st.ExporterExit == nil || *st.ExporterExit != 3 {
			t.Errorf("status %+v, want the exporter's status 3", st)
		}
		es := stateOf(h, ref, st)
		if es.Phase != provisioner.ExternalFailed || es.Reason != ReasonProcessExited ||
			!strings.Contains(es.Message, "exporter exited with status 3") || !strings.Contains(es.Message, "broken") {
			t.Errorf("external state %+v, want Failed with status 3 and the log", es)
		}
	})

	t.Run("ProgramKilled", func(t *testing.T) {
		// SIGTERM to the exporter alone: its wrapper records the shell's 128+15.
		ref, idir := start("termed", "sh", "-c", "exec sleep 300", "exporter")
		waitPhase(t, m, ref, PhaseRunning)
		leader := groupLeader(t, idir, "exporter")
		kids := groupMembers(leader)
		if len(kids) != 2 {
			t.Fatalf("exporter group %d holds %v, want the wrapper and sleep", leader, kids)
		}
		for _, pid := range kids {
			if pid != leader {
				_ = syscall.Kill(pid, syscall.SIGTERM)
			}
		}
		st := waitPhase(t, m, ref, PhaseExited)
		if st.ExporterExit == nil || *st.ExporterExit != 143 {
			t.Errorf("status %+v, want the exporter's status 143", st)
		}
	})

	t.Run("GroupKilledOverStaleStatus", func(t *testing.T) {
		stale = true
		defer func() { stale = false }()
		ref, idir := start("stale", "sh", "-c", "exec sleep 300", "exporter")
		waitPhase(t, m, ref, PhaseRunning)
		if err := syscall.Kill(-groupLeader(t, idir, "exporter"), syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		st := waitPhase(t, m, ref, PhaseExited)
		if st.ExporterExit != nil || strings.Contains(st.Message, "status") {
			t.Errorf("status %+v: a killed group must leave no status, and the stale one must be gone", st)
		}
		if es := stateOf(h, ref, st); es.Phase != provisioner.ExternalFailed {
			t.Errorf("external state %+v, want Failed", es)
		}
	})

	t.Run("StopWaitsForGracefulExit", func(t *testing.T) {
		marker := filepath.Join(dir, "graceful")
		ref, idir := start("graceful", "sh", "-c", `m=$1; trap 'sleep 1; echo done > "$m"; exit 0' TERM; while :; do sleep 0.1; done`, "exporter", marker)
		waitPhase(t, m, ref, PhaseRunning)
		leader := groupLeader(t, idir, "exporter")
		if err := m.Stop(ctx, ref); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(marker); err != nil {
			t.Errorf("Stop returned before the exporter finished its shutdown: %v", err)
		}
		checkGone(t, idir, leader)
		// A new instance in the same place starts clean, with no status of the old one.
		ref, _ = start("graceful", "sh", "-c", "exec sleep 300", "exporter")
		if st := waitPhase(t, m, ref, PhaseRunning); st.ExporterExit != nil {
			t.Errorf("status %+v after a restart", st)
		}
	})
}

// hookRunner runs argv through localRunner and then calls after with the script's name and
// arguments (argv is sh -c SCRIPT NAME ARGS...), to change the host between two scripts.
type hookRunner struct {
	after func(script string, args []string)
}

func (r hookRunner) Run(ctx context.Context, argv []string, stdin []byte) ([]byte, []byte, error) {
	out, errOut, err := localRunner{}.Run(ctx, argv, stdin)
	if err == nil && len(argv) > 4 {
		r.after(argv[3], argv[4:])
	}
	return out, errOut, err
}

// groupMembers returns the live (not zombie) processes of process group pgid.
func groupMembers(pgid int) []int {
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
		if len(f) > 2 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			pids = append(pids, pid)
		}
	}
	return pids
}
