package baremetal

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/exporterset/exporterset/provisioner"
)

// TestLabProvisionerLifecycle drives the Provisioner through its interfaces against two real
// sshd hosts (lab1 with 2 slots, lab2 with 1) running real QEMU and a stand-in exporter.
func TestLabProvisionerLifecycle(t *testing.T) {
	requireLab(t)
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		t.Skip("qemu-system-x86_64 not installed (Debian package qemu-system-x86): ", err)
	}
	start := time.Now()
	env := startLab(t, 2)
	lab1, lab2 := env.hosts[0], env.hosts[1]
	// Whatever happens, no QEMU or exporter outlives the test: their process groups are
	// killed from their pid files (registered after the lab, so this runs first).
	t.Cleanup(env.lab.KillInstances)

	params, err := json.Marshal(map[string]any{
		"hosts": []map[string]any{
			{"name": "lab1", "address": lab1.host.Address, "arch": "x86_64", "slots": 2},
			{"name": "lab2", "address": lab2.host.Address, "arch": "x86_64", "slots": 1},
		},
		"root":    env.hostRoot,
		"runtime": map[string]any{"binary": qemu, "extraArgs": []string{"-machine", "none"}},
		// The stand-in exporter runs only if its config arrived, until the test writes the
		// status it is to exit with to exit-code in its directory.
		"exporter": map[string]any{"command": []string{"sh", "-c",
			`test -s "$1" || exit 1; until [ -e exit-code ]; do sleep 0.1; done; exit "$(cat exit-code)"`, "exporter"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	secret := map[string][]byte{SecretKeyPrivateKey: env.clientKey, SecretKeyKnownHosts: env.knownHosts()}
	req := testRequest(t, string(params), "lab-ssh", secret)

	// A clock that can be moved forward, to forget a remembered dial failure; dials bounded
	// to 2 s and keepalives to 1 s, so that a cut host is found out quickly.
	var skew atomic.Int64
	var dials atomic.Int32
	p := New(WithClock(func() time.Time { return time.Now().Add(time.Duration(skew.Load())) }),
		WithDial(func(ctx context.Context, h Host, user string, creds *Credentials) (Conn, error) {
			dials.Add(1)
			ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			return DialConn(ctx, h, user, creds)
		}))
	p.conns.pingTimeout = time.Second
	defer p.Close()
	// A deadline for the whole walk, not a timing: it takes about 30 s alone, and four times
	// that in a CI run where the other packages' lab tests share the two CPUs.
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	// phase logs how far the walk got, so that a slow run shows where the time went.
	phase := func(what string) { t.Logf("%v: %s", time.Since(start).Round(time.Millisecond), what) }

	if err := p.Validate(ctx, req); err != nil {
		t.Fatalf("Validate: %v", err)
	}

	// Three instances spread over 2+1 slots; a fourth finds none.
	names := []string{"pool-a", "pool-b", "pool-c"}
	wantHost := map[string]string{"pool-a": "lab1", "pool-b": "lab2", "pool-c": "lab1"}
	recorded := map[string]*provisioner.Request{}
	for _, n := range names {
		ann, err := p.CreateExternal(ctx, forInstance(req, n, nil))
		if err != nil {
			t.Fatalf("CreateExternal %s: %v", n, err)
		}
		if ann[AnnotationHost] != wantHost[n] {
			t.Errorf("%s placed on %q, want %s", n, ann[AnnotationHost], wantHost[n])
		}
		recorded[n] = forInstance(req, n, ann)
	}
	_, err = p.CreateExternal(ctx, forInstance(req, "pool-d", nil))
	if !errors.Is(err, ErrNoFreeSlot) || provisioner.IsInvalid(err) {
		t.Errorf("a fourth instance: %v, want a transient no-free-slot error", err)
	}
	for _, n := range names {
		waitExternal(t, p, recorded[n], provisioner.ExternalReady)
		dir := filepath.Join(env.hosts[map[string]int{"lab1": 0, "lab2": 1}[wantHost[n]]].rootDir, "team-a_pool", n)
		if got, err := os.ReadFile(filepath.Join(dir, configFile)); err != nil || !bytes.Equal(got, recorded[n].ExporterConfig) {
			t.Errorf("%s: config.yaml on %s = %q, %v", n, wantHost[n], got, err)
		}
	}
	if _, err := os.Stat(filepath.Join(lab1.rootDir, "team-a_pool", "pool-b")); !os.IsNotExist(err) {
		t.Errorf("lab1 shows lab2's instance pool-b (%v): the hosts' roots are not separate", err)
	}
	if got := inventoryNames(t, p, req); got != "lab1:pool-a,lab1:pool-c,lab2:pool-b" {
		t.Errorf("inventory %s, want exactly the three instances", got)
	}
	if n := dials.Load(); n != 2 {
		t.Errorf("%d SSH connections for all that, want 2 (one per host, kept)", n)
	}

	phase("three instances Ready")

	// lab1 dies: its instances are Failed, naming it, so they are replaced elsewhere.
	env.lab.Cut(t, 0)
	cutAt := time.Now()
	for _, n := range []string{"pool-a", "pool-c"} {
		st, err := p.ObserveExternal(ctx, recorded[n])
		if err != nil || st.Phase != provisioner.ExternalFailed || st.Reason != ReasonHostUnreachable || !strings.Contains(st.Message, `lab host "lab1"`) {
			t.Errorf("%s on the cut lab1: %+v, %v; want Failed/HostUnreachable naming lab1", n, st, err)
		}
	}
	t.Logf("cut host found out in %v: %s", time.Since(cutAt).Round(time.Millisecond), firstLine(observe(t, p, recorded["pool-a"]).Message))
	if st := observe(t, p, recorded["pool-b"]); st.Phase != provisioner.ExternalReady {
		t.Errorf("pool-b on lab2 with lab1 cut: %+v, want Ready", st)
	}
	if got := inventoryNames(t, p, req); got != "lab2:pool-b" {
		t.Errorf("inventory with lab1 cut: %s, want lab2's instance only", got)
	}
	if err := p.Cleanup(ctx, recorded["pool-a"]); err == nil || provisioner.IsInvalid(err) || !strings.Contains(err.Error(), `lab host "lab1"`) {
		t.Errorf("Cleanup on the cut lab1: %v, want a transient error naming lab1", err)
	}

	// Cleanup of lab2's instance, twice.
	bdir := filepath.Join(lab2.rootDir, "team-a_pool", "pool-b")
	qpid, epid := groupLeader(t, bdir, "qemu"), groupLeader(t, bdir, "exporter")
	for i := range 2 {
		if err := p.Cleanup(ctx, recorded["pool-b"]); err != nil {
			t.Fatalf("Cleanup #%d of pool-b: %v", i+1, err)
		}
	}
	checkGone(t, bdir, qpid, epid)

	phase("lab1 cut, lab2's instance cleaned up")

	// lab1 is back (and its failure forgotten): the rest is cleaned up.
	env.lab.Restore(t, 0)
	skew.Add(int64(time.Minute))
	for _, n := range []string{"pool-a", "pool-c"} {
		for i := range 2 {
			if err := p.Cleanup(ctx, recorded[n]); err != nil {
				t.Fatalf("Cleanup #%d of %s: %v", i+1, n, err)
			}
		}
		if st := observe(t, p, recorded[n]); st.Phase != provisioner.ExternalGone {
			t.Errorf("%s after Cleanup: %+v, want Gone", n, st)
		}
	}
	if got := inventoryNames(t, p, req); got != "" {
		t.Errorf("inventory after Cleanup: %s, want nothing", got)
	}

	phase("lab1 restored and cleaned up")

	// An exporter that exits 0 (its lease over) is Exited; one that exits 3 is Failed, with
	// the status. Both on lab2, one after the other.
	for _, c := range []struct {
		code, reason string
		phase        provisioner.ExternalPhase
	}{{"0", ReasonExporterExited, provisioner.ExternalExited}, {"3", ReasonProcessExited, provisioner.ExternalFailed}} {
		n := "pool-exit" + c.code
		ann, err := p.CreateExternal(ctx, forInstance(req, n, map[string]string{AnnotationHost: "lab2"}))
		if err != nil {
			t.Fatalf("CreateExternal %s: %v", n, err)
		}
		r := forInstance(req, n, ann)
		waitExternal(t, p, r, provisioner.ExternalReady)
		dir := filepath.Join(lab2.rootDir, "team-a_pool", n)
		if err := os.WriteFile(filepath.Join(dir, "exit-code.tmp"), []byte(c.code), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(dir, "exit-code.tmp"), filepath.Join(dir, "exit-code")); err != nil {
			t.Fatal(err)
		}
		st := waitExited(t, p, r)
		if st.Phase != c.phase || st.Reason != c.reason || !strings.Contains(st.Message, `lab host "lab2"`) ||
			!strings.Contains(st.Message, "exporter exited with status "+c.code) {
			t.Errorf("%s after its exporter exited %s: %+v, want %s/%s naming lab2 and the status", n, c.code, st, c.phase, c.reason)
		}
		if err := p.Cleanup(ctx, r); err != nil {
			t.Fatalf("Cleanup of %s: %v", n, err)
		}
	}

	phase("exits reported")

	// A class whose known_hosts holds another key for the hosts.
	wrongKey := strings.Fields(env.wrongHostLine)
	var wrongHosts strings.Builder
	for _, h := range env.hosts {
		wrongHosts.WriteString(h.host.Address + " " + wrongKey[0] + " " + wrongKey[1] + "\n")
	}
	bad := testRequest(t, string(params), "lab-ssh", map[string][]byte{SecretKeyPrivateKey: env.clientKey, SecretKeyKnownHosts: []byte(wrongHosts.String())})
	_, err = p.CreateExternal(ctx, forInstance(bad, "pool-e", nil))
	if !provisioner.IsInvalid(err) || !strings.Contains(err.Error(), `lab host "lab1"`) || !strings.Contains(err.Error(), `lab host "lab2"`) {
		t.Errorf("CreateExternal with wrong host keys: %v, want an Invalid error naming both hosts", err)
	}
	st := observe(t, p, forInstance(bad, "pool-e", map[string]string{AnnotationHost: "lab1"}))
	got, want := fingerprint(t, lab1.hostPK), fingerprint(t, []byte(env.wrongHostLine))
	if st.Phase != provisioner.ExternalFailed || st.Reason != ReasonHostKeyMismatch || !strings.Contains(st.Message, `lab host "lab1"`) ||
		!strings.Contains(st.Message, got) || !strings.Contains(st.Message, want) {
		t.Errorf("ObserveExternal with a wrong host key: %+v, want Failed/HostKeyMismatch naming lab1, %s and %s", st, got, want)
	}
	t.Logf("provisioner lab test took %v", time.Since(start).Round(time.Millisecond))
}

// observe calls ObserveExternal or fails the test.
func observe(t *testing.T, p *Provisioner, req *provisioner.Request) provisioner.ExternalState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	st, err := p.ObserveExternal(ctx, req)
	if err != nil {
		t.Fatalf("ObserveExternal %s: %v", req.Exporter.Name, err)
	}
	return st
}

// waitExternal polls ObserveExternal until the instance reaches want (a minute at most: a
// loaded CI machine starts QEMU slowly), failing at once on another final phase.
func waitExternal(t *testing.T, p *Provisioner, req *provisioner.Request, want provisioner.ExternalPhase) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		st := observe(t, p, req)
		switch {
		case st.Phase == want:
			return
		case st.Phase == provisioner.ExternalFailed, time.Now().After(deadline):
			t.Fatalf("%s is %+v, want %s", req.Exporter.Name, st, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitExited polls ObserveExternal until the instance is no longer Ready (a minute at most) and
// returns that state.
func waitExited(t *testing.T, p *Provisioner, req *provisioner.Request) provisioner.ExternalState {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		st := observe(t, p, req)
		if st.Phase != provisioner.ExternalReady {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s is still %+v", req.Exporter.Name, st)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// inventoryNames returns the set's inventory as sorted "host:instance" entries, checking
// that each names the Exporter's UID.
func inventoryNames(t *testing.T, p *Provisioner, req *provisioner.Request) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	list, err := p.InventoryExternal(ctx, req)
	if err != nil {
		t.Fatalf("InventoryExternal: %v", err)
	}
	var out []string
	for _, r := range list {
		if r.InstanceUID != "uid-"+r.Instance || r.Kind != LabInstanceKind {
			t.Errorf("inventory entry %+v", r)
		}
		out = append(out, r.Annotations[AnnotationHost]+":"+r.Instance)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// fingerprint returns the SHA256 fingerprint of an authorized_keys line.
func fingerprint(t *testing.T, line []byte) string {
	t.Helper()
	k, _, _, _, err := ssh.ParseAuthorizedKey(line)
	if err != nil {
		t.Fatal(err)
	}
	return ssh.FingerprintSHA256(k)
}

// firstLine returns s up to its first newline.
func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
