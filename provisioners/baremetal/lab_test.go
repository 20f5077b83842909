package baremetal

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLab runs the package against real sshd hosts, each in a network namespace of its own.
func TestLab(t *testing.T) {
	requireLab(t)
	start := time.Now()
	env := startLab(t, 2)
	t.Logf("lab of %d hosts up in %v", len(env.hosts), time.Since(start).Round(time.Millisecond))
	good := credentials(t, env.clientKey, env.knownHosts())
	lab1, lab2 := env.hosts[0].host, env.hosts[1].host

	t.Run("DialAndRun", func(t *testing.T) {
		for _, h := range []Host{lab1, lab2} {
			c := dial(t, h, good)
			out, _, err := c.Run(context.Background(), []string{"sh", "-c", `id -u; printf '%s\n' "$1"`, "sh", "a 'b' \"c\""}, nil)
			if err != nil {
				t.Fatalf("%s: %v", h.Name, err)
			}
			if got, want := string(out), "0\na 'b' \"c\"\n"; got != want {
				t.Errorf("%s: output %q, want %q", h.Name, got, want)
			}
			_, _, err = c.Run(context.Background(), []string{"sh", "-c", "echo oops >&2; exit 7"}, nil)
			var ce *CommandError
			if !errors.As(err, &ce) || ce.ExitStatus != 7 || ce.Host != h.Name || !strings.Contains(err.Error(), `"oops"`) {
				t.Errorf("%s: failing command: %v", h.Name, err)
			}
			out, _, err = c.Run(context.Background(), []string{"cat"}, []byte("via stdin"))
			if err != nil || string(out) != "via stdin" {
				t.Errorf("%s: stdin: %q, %v", h.Name, out, err)
			}
		}
	})

	t.Run("HostKeyMismatch", func(t *testing.T) {
		fields := strings.Fields(env.wrongHostLine)
		wrong := credentials(t, env.clientKey, []byte(lab1.Address+" "+fields[0]+" "+fields[1]+"\n"))
		_, err := Dial(context.Background(), lab1, "root", wrong)
		var he *HostKeyError
		if !errors.As(err, &he) || he.Problem != HostKeyMismatch || he.Host != "lab1" || !strings.Contains(err.Error(), `lab host "lab1"`) {
			t.Fatalf("err = %v, want a host key mismatch naming lab1", err)
		}
		// lab2 is not in a known_hosts that lists only lab1.
		only1 := credentials(t, env.clientKey, []byte(strings.SplitAfter(string(env.knownHosts()), "\n")[0]))
		_, err = Dial(context.Background(), lab2, "root", only1)
		if !errors.As(err, &he) || he.Problem != HostKeyUnknown || he.Host != "lab2" {
			t.Fatalf("err = %v, want an unknown host key for lab2", err)
		}
	})

	t.Run("AuthRefused", func(t *testing.T) {
		stranger := credentials(t, env.strangerKey, env.knownHosts())
		_, err := Dial(context.Background(), lab1, "root", stranger)
		var ae *AuthError
		if !errors.As(err, &ae) || ae.Host != "lab1" || ae.User != "root" {
			t.Fatalf("err = %v, want an authentication error for lab1", err)
		}
	})

	t.Run("Unreachable", func(t *testing.T) {
		refused := lab1
		refused.Port = 2 // nothing listens there
		_, err := Dial(context.Background(), refused, "root", good)
		var ue *UnreachableError
		if !errors.As(err, &ue) || ue.Host != "lab1" || !strings.Contains(err.Error(), "refused") {
			t.Fatalf("refused port: err = %v, want an unreachable error naming the refusal", err)
		}
		// An address no route leads to times out within the context's deadline.
		lost := Host{Name: "lost", Address: "10.231.255.254", Port: 22}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		t0 := time.Now()
		_, err = Dial(ctx, lost, "root", good)
		if !errors.As(err, &ue) || ue.Host != "lost" || time.Since(t0) > 5*time.Second {
			t.Fatalf("no route: err = %v after %v, want an unreachable error within the deadline", err, time.Since(t0))
		}
		// A port that accepts TCP but never speaks SSH: the handshake is cut at the deadline.
		silent, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer silent.Close()
		go func() {
			for {
				c, err := silent.Accept()
				if err != nil {
					return
				}
				defer c.Close()
			}
		}()
		port := silent.Addr().(*net.TCPAddr).Port
		ctx2, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel2()
		t0 = time.Now()
		_, err = Dial(ctx2, Host{Name: "mute", Address: "127.0.0.1", Port: port}, "root", good)
		if !errors.As(err, &ue) || ue.Host != "mute" || time.Since(t0) > 5*time.Second {
			t.Fatalf("silent port: err = %v after %v, want an unreachable error at the deadline", err, time.Since(t0))
		}
		t.Logf("silent port: %v", err)
	})

	t.Run("CancelClosesSession", func(t *testing.T) {
		c := dial(t, lab1, good)
		ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		t0 := time.Now()
		_, _, err := c.Run(ctx, []string{"sleep", "30"}, nil)
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > 5*time.Second {
			t.Fatalf("err = %v after %v, want the deadline at once", err, time.Since(t0))
		}
		// The connection is still usable for the next command.
		if out, _, err := c.Run(context.Background(), []string{"echo", "ok"}, nil); err != nil || string(out) != "ok\n" {
			t.Fatalf("after cancel: %q, %v", out, err)
		}
	})

	fakeQEMU := writeFakeQEMU(t, env.dir)

	t.Run("LifecycleQEMU", func(t *testing.T) {
		qemu, err := exec.LookPath("qemu-system-x86_64")
		if err != nil {
			t.Skip("qemu-system-x86_64 not installed (Debian package qemu-system-x86): ", err)
		}
		m := labMachine(t, lab1, good, filepath.Join(env.dir, "lab1 root 'q'"))
		ref := InstanceRef{Namespace: "team-a", Set: "pool", Name: "pool-abc12", UID: "0b5e-uid"}
		config := []byte("endpoint: grpc.example:443\ntoken: s3cret\n")
		spec := LaunchSpec{InstanceRef: ref, Binary: qemu, ExtraArgs: []string{"-machine", "none"},
			ExporterCommand: []string{"sh", "-c", "exec sleep 300", "exporter"}, Config: config}
		ctx := context.Background()
		if err := m.Create(ctx, spec); err != nil {
			t.Fatal(err)
		}
		dir, _ := m.Dir(ref)
		checkMode(t, dir, 0o700)
		checkMode(t, filepath.Join(dir, "config.yaml"), 0o600)
		if got, _ := os.ReadFile(filepath.Join(dir, "config.yaml")); !bytes.Equal(got, config) {
			t.Errorf("config.yaml = %q", got)
		}
		st := waitPhase(t, m, ref, PhaseRunning)
		if st.Meta == nil || st.Meta.UID != ref.UID || st.Meta.Instance != ref.Name || st.Meta.Created.IsZero() {
			t.Errorf("meta %+v", st.Meta)
		}
		qmpGreets(t, filepath.Join(dir, QMPSocket))
		qpid, epid := groupLeader(t, dir, "qemu"), groupLeader(t, dir, "exporter")

		if err := m.Create(ctx, spec); err != nil {
			t.Fatalf("second Create: %v", err)
		}
		if q, e := groupLeader(t, dir, "qemu"), groupLeader(t, dir, "exporter"); q != qpid || e != epid {
			t.Errorf("second Create restarted a running instance: %d/%d -> %d/%d", qpid, epid, q, e)
		}
		other := spec
		other.UID = "another-uid"
		if err := m.Create(ctx, other); err == nil || !strings.Contains(err.Error(), "0b5e-uid") {
			t.Errorf("Create over another UID's directory: %v", err)
		}

		inv, err := m.Inventory(ctx)
		if err != nil || len(inv) != 1 || inv[0].UID != ref.UID || inv[0].Namespace != "team-a" || inv[0].Set != "pool" || inv[0].Dir != dir {
			t.Fatalf("Inventory = %+v, %v", inv, err)
		}
		if err := m.Stop(ctx, ref); err != nil {
			t.Fatal(err)
		}
		checkGone(t, dir, qpid, epid)
		if err := m.Stop(ctx, ref); err != nil {
			t.Errorf("second Stop: %v", err)
		}
		if st, err := m.Observe(ctx, ref); err != nil || st.Phase != PhaseGone {
			t.Errorf("after Stop: %+v, %v", st, err)
		}
		if inv, err := m.Inventory(ctx); err != nil || len(inv) != 0 {
			t.Errorf("Inventory after Stop = %+v, %v", inv, err)
		}
	})

	t.Run("ExitedQuotesLog", func(t *testing.T) {
		m := labMachine(t, lab2, good, filepath.Join(env.dir, "lab2-root"))
		ref := InstanceRef{Namespace: "ns", Set: "set", Name: "dies", UID: "u-dies"}
		err := m.Create(context.Background(), LaunchSpec{InstanceRef: ref, Binary: fakeQEMU,
			ExporterCommand: []string{"sh", "-c", `echo "boom $((6*7))" >&2; exit 3`, "exporter"}, Config: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		st := waitPhase(t, m, ref, PhaseExited)
		if !strings.Contains(st.Message, "exporter exited with status 3") || !strings.Contains(st.Message, "boom 42") || strings.Contains(st.Message, "qemu") {
			t.Errorf("message %q should say the exporter exited with status 3 and quote its log", st.Message)
		}
		if st.ExporterExit == nil || *st.ExporterExit != 3 || st.QEMUExit != nil {
			t.Errorf("exit statuses %v/%v, want the exporter's 3 and QEMU running", st.ExporterExit, st.QEMUExit)
		}
	})

	t.Run("ExitedZero", func(t *testing.T) {
		m := labMachine(t, lab2, good, filepath.Join(env.dir, "lab2-root"))
		ref := InstanceRef{Namespace: "ns", Set: "set", Name: "done", UID: "u-done"}
		err := m.Create(context.Background(), LaunchSpec{InstanceRef: ref, Binary: fakeQEMU,
			ExporterCommand: []string{"sh", "-c", "echo lease over", "exporter"}, Config: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		st := waitPhase(t, m, ref, PhaseExited)
		if st.ExporterExit == nil || *st.ExporterExit != 0 || !strings.Contains(st.Message, "exporter exited with status 0") {
			t.Errorf("status %+v, want the exporter's status 0", st)
		}
	})

	t.Run("LiteralArgv", func(t *testing.T) {
		root := filepath.Join(env.dir, `lab2 root "$(touch pwned)"; x`)
		m := labMachine(t, lab2, good, root)
		marker := filepath.Join("/tmp", fmt.Sprintf("pwned-%d", os.Getpid()))
		defer os.Remove(marker)
		weird := `we ird 'single' "double"; $(touch pwned) ` + "`touch pwned`"
		injections := []string{"$(touch " + marker + ")", "; touch " + marker, "' ; touch " + marker + " '", `" ; touch ` + marker + ` "`, "*"}
		ref := InstanceRef{Namespace: "ns", Set: "set", Name: "literal", UID: "uid 'x' \"y\"; $(touch " + marker + ")"}
		err := m.Create(context.Background(), LaunchSpec{InstanceRef: ref, Binary: fakeQEMU, ExtraArgs: injections,
			ExporterCommand: []string{"touch", weird}, Config: []byte("x")})
		if err != nil {
			t.Fatal(err)
		}
		dir, _ := m.Dir(ref)
		waitPhase(t, m, ref, PhaseExited) // touch is done
		if _, err := os.Stat(filepath.Join(dir, weird)); err != nil {
			t.Errorf("the exporter's argument did not arrive literally: %v", err)
		}
		args, err := os.ReadFile(filepath.Join(dir, "qemu-argv"))
		if err != nil {
			t.Fatal(err)
		}
		got := strings.Split(strings.TrimSuffix(string(args), "\x00"), "\x00")
		if len(got) < len(injections) || strings.Join(got[len(got)-len(injections):], "\x00") != strings.Join(injections, "\x00") {
			t.Errorf("QEMU's argv %q does not end with %q", got, injections)
		}
		for _, p := range []string{marker, filepath.Join(dir, "pwned"), filepath.Join(env.dir, "pwned")} {
			if _, err := os.Stat(p); err == nil {
				t.Errorf("%s exists: an argument was executed", p)
			}
		}
		inv, err := m.Inventory(context.Background())
		if err != nil || len(inv) != 1 || inv[0].UID != ref.UID {
			t.Errorf("Inventory = %+v, %v", inv, err)
		}
		if err := m.Stop(context.Background(), ref); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("Stop left %s: %v", dir, err)
		}
	})
	t.Logf("lab test took %v", time.Since(start).Round(time.Millisecond))
}

// labMachine dials h and returns a Machine on root whose instances are stopped at cleanup.
func labMachine(t *testing.T, h Host, creds *Credentials, root string) *Machine {
	t.Helper()
	m := NewMachine(h.Name, dial(t, h, creds), root)
	t.Cleanup(func() {
		inv, _ := m.Inventory(context.Background())
		for _, mt := range inv {
			_ = m.stopDir(context.Background(), mt.Dir)
		}
	})
	return m
}

// writeFakeQEMU writes a stand-in for QEMU that records its argv (NUL-separated) and stays up.
func writeFakeQEMU(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "fake-qemu")
	script := "#!/bin/sh\nprintf '%s\\0' \"$@\" > qemu-argv\nexec sleep 300\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitPhase polls Observe until the instance reaches want (a minute at most: a loaded CI
// machine starts QEMU slowly).
func waitPhase(t *testing.T, m *Machine, ref InstanceRef, want Phase) Status {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := m.Observe(context.Background(), ref)
		if err != nil {
			t.Fatal(err)
		}
		if st.Phase == want {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s is %s (%s), want %s", ref.Name, st.Phase, st.Message, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// checkMode fails unless p has exactly mode perm.
func checkMode(t *testing.T, p string, perm os.FileMode) {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != perm {
		t.Errorf("%s has mode %o, want %o", p, fi.Mode().Perm(), perm)
	}
}

// groupLeader reads NAME.pid in dir and checks the process leads its own session and group.
func groupLeader(t *testing.T, dir, name string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, name+".pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatalf("%s pid %d: %v", name, pid, err)
	}
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if f[2] != strconv.Itoa(pid) || f[3] != strconv.Itoa(pid) {
		t.Errorf("%s pid %d: process group %s, session %s; want its own", name, pid, f[2], f[3])
	}
	return pid
}

// checkGone fails if dir or any process of the groups pids lead (the wrappers and the
// programs they run) still exists.
func checkGone(t *testing.T, dir string, pids ...int) {
	t.Helper()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("Stop left %s: %v", dir, err)
	}
	for _, pid := range pids {
		// A killed process lingers as a zombie until init reaps it; that is dead enough.
		deadline := time.Now().Add(3 * time.Second)
		for {
			left := groupMembers(pid)
			if len(left) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("Stop left process group %d running: %v", pid, left)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// qmpGreets connects to QEMU's QMP socket and checks the greeting.
func qmpGreets(t *testing.T, sock string) {
	t.Helper()
	// The socket path may pass the 108-byte limit; connect through /proc/self/cwd-less
	// means: chdir is process-wide, so use a short symlink instead.
	link := filepath.Join(os.TempDir(), fmt.Sprintf("bmqmp-%d", os.Getpid()))
	_ = os.Remove(link)
	if err := os.Symlink(filepath.Dir(sock), link); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(link)
	// Running says the process is up, not that QEMU has made its socket yet: wait for it.
	var c net.Conn
	var err error
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if c, err = net.DialTimeout("unix", filepath.Join(link, filepath.Base(sock)), 5*time.Second); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatalf("QMP socket: %v", err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, `"QMP"`) {
		t.Fatalf("QMP greeting %q, %v", line, err)
	}
}
