package baremetal

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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
	if !strings.HasPrefix(st.Message, "qemu exited") {
		t.Errorf("message %q", st.Message)
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
