package baremetal

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// fakeProvisioner returns a Provisioner on a fake lab of lab1 (2 slots) and lab2 (1 slot),
// with the set's request.
func fakeProvisioner(t *testing.T) (*Provisioner, *fakeLab, *fakeClock, *provisioner.Request) {
	t.Helper()
	lab, clock := newFakeLab("lab1", "lab2"), newFakeClock()
	p := New(WithDial(lab.dial), WithClock(clock.Now))
	t.Cleanup(func() { _ = p.Close() })
	return p, lab, clock, testRequest(t, fakeParams, "lab-ssh", testCredentials(t, "10.0.0.1", "10.0.0.2"))
}

// create runs CreateExternal for instance name and returns the host it recorded.
func create(t *testing.T, p *Provisioner, clock *fakeClock, req *provisioner.Request, name string) string {
	t.Helper()
	clock.Add(time.Second) // placements finished a second ago are in the next inventory
	ann, err := p.CreateExternal(context.Background(), forInstance(req, name, nil))
	if err != nil {
		t.Fatalf("CreateExternal %s: %v", name, err)
	}
	return ann[AnnotationHost]
}

func TestCreateExternalPlacement(t *testing.T) {
	p, lab, clock, req := fakeProvisioner(t)
	ctx := context.Background()
	var got []string
	for _, n := range []string{"pool-a", "pool-b", "pool-c"} {
		got = append(got, create(t, p, clock, req, n))
	}
	if strings.Join(got, ",") != "lab1,lab2,lab1" {
		t.Errorf("placed on %v, want lab1,lab2,lab1 (least used first)", got)
	}
	cfg := lab.host("lab2").instances["/srv/es/team-a_pool/pool-b"]
	if cfg == nil || string(cfg.config) != string(forInstance(req, "pool-b", nil).ExporterConfig) {
		t.Errorf("lab2 did not get pool-b's exporter config: %+v", cfg)
	}
	clock.Add(time.Second)
	_, err := p.CreateExternal(ctx, forInstance(req, "pool-d", nil))
	if !errors.Is(err, ErrNoFreeSlot) || provisioner.IsInvalid(err) || !strings.Contains(err.Error(), "lab1 2/2, lab2 1/1") {
		t.Errorf("a fourth instance: %v, want a transient no-free-slot error with the counts", err)
	}
	// A repeated create after a lost answer (no host recorded yet) finds the instance.
	if h := create(t, p, clock, req, "pool-b"); h != "lab2" {
		t.Errorf("CreateExternal of pool-b again placed it on %s, want lab2 where it runs", h)
	}
	// A recorded host is used as it is, and the running instance left alone.
	ann, err := p.CreateExternal(ctx, forInstance(req, "pool-a", map[string]string{AnnotationHost: "lab1"}))
	if err != nil || ann[AnnotationHost] != "lab1" || lab.host("lab1").count() != 2 {
		t.Errorf("CreateExternal on the recorded host: %v, %v (lab1 holds %d)", ann, err, lab.host("lab1").count())
	}
	// A config-less request is the reconciler without its hosted mode.
	noConfig := forInstance(req, "pool-e", nil)
	noConfig.ExporterConfig = nil
	if _, err := p.CreateExternal(ctx, noConfig); !provisioner.IsInvalid(err) || !strings.Contains(err.Error(), "hosted mode") {
		t.Errorf("CreateExternal without config: %v, want an Invalid error naming the hosted mode", err)
	}
}

func TestCreateExternalConcurrentPlacement(t *testing.T) {
	p, lab, clock, req := fakeProvisioner(t)
	for _, n := range []string{"lab1", "lab2"} {
		lab.host(n).set(func(h *fakeHost) { h.delay = 20 * time.Millisecond })
	}
	clock.Add(time.Second)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i, n := range []string{"pool-a", "pool-b", "pool-c", "pool-d"} {
		wg.Go(func() { _, errs[i] = p.CreateExternal(context.Background(), forInstance(req, n, nil)) })
	}
	wg.Wait()
	var full int
	for _, err := range errs {
		if errors.Is(err, ErrNoFreeSlot) {
			full++
		} else if err != nil {
			t.Error(err)
		}
	}
	if c1, c2 := lab.host("lab1").count(), lab.host("lab2").count(); full != 1 || c1 != 2 || c2 != 1 {
		t.Errorf("4 concurrent creates for 3 slots: lab1 %d, lab2 %d, %d refused; want 2, 1, 1", c1, c2, full)
	}
}

func TestCreateExternalHostErrors(t *testing.T) {
	p, lab, clock, req := fakeProvisioner(t)
	ctx := context.Background()
	keyErr := func(name string) error {
		return &HostKeyError{Host: name, Address: name + ":22", Problem: HostKeyMismatch, Got: "SHA256:got", Want: []string{"SHA256:want"}}
	}
	// One host unreachable: placement goes to the other.
	lab.host("lab1").set(func(h *fakeHost) {
		h.dialErr = &UnreachableError{Host: "lab1", Address: "10.0.0.1:22", Err: errors.New("no route to host")}
	})
	if h := create(t, p, clock, req, "pool-a"); h != "lab2" {
		t.Errorf("with lab1 unreachable, placed on %s", h)
	}
	// And then no slot is left: transient, quoting the unreachable host.
	clock.Add(time.Second)
	_, err := p.CreateExternal(ctx, forInstance(req, "pool-b", nil))
	if err == nil || provisioner.IsInvalid(err) || !strings.Contains(err.Error(), `lab host "lab1"`) || !strings.Contains(err.Error(), "no route to host") {
		t.Errorf("lab1 unreachable, lab2 full: %v, want a transient error naming lab1 and its cause", err)
	}
	// Every host refusing its key is a person's job: Invalid, naming the hosts. (The hosts
	// were reinstalled: their kept connections are gone with their old sshd.)
	for _, n := range []string{"lab1", "lab2"} {
		lab.host(n).set(func(h *fakeHost) { h.dead, h.dialErr = true, keyErr(n) })
	}
	clock.Add(time.Minute) // past the remembered unreachable lab1
	_, err = p.CreateExternal(ctx, forInstance(req, "pool-c", nil))
	if !provisioner.IsInvalid(err) || !strings.Contains(err.Error(), `lab host "lab1"`) || !strings.Contains(err.Error(), `lab host "lab2"`) {
		t.Errorf("every host key refused: %v, want an Invalid error naming lab1 and lab2", err)
	}
	// On a recorded host: a refused key is Invalid, an unreachable host transient.
	recorded := forInstance(req, "pool-a", map[string]string{AnnotationHost: "lab2"})
	if _, err := p.CreateExternal(ctx, recorded); !provisioner.IsInvalid(err) || !strings.Contains(err.Error(), `lab host "lab2"`) {
		t.Errorf("recorded host refusing: %v, want Invalid naming lab2", err)
	}
	lab.host("lab2").set(func(h *fakeHost) {
		h.dialErr = &UnreachableError{Host: "lab2", Address: "10.0.0.2:22", Err: errors.New("i/o timeout")}
	})
	if _, err := p.CreateExternal(ctx, recorded); err == nil || provisioner.IsInvalid(err) || !strings.Contains(err.Error(), `lab host "lab2"`) {
		t.Errorf("recorded host unreachable: %v, want a transient error naming lab2", err)
	}
}

func TestObserveExternalStates(t *testing.T) {
	p, lab, clock, req := fakeProvisioner(t)
	ctx := context.Background()
	host := create(t, p, clock, req, "pool-a")
	on := func(h string) map[string]string { return map[string]string{AnnotationHost: h} }
	// procs sets the states the status script reports for pool-a's processes.
	procs := func(qemu, exporter string) {
		lab.host(host).set(func(h *fakeHost) {
			in := h.instances["/srv/es/team-a_pool/pool-a"]
			in.qemu, in.exporter = qemu, exporter
		})
	}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		setup       func()
		phase       provisioner.ExternalPhase
		reason      string
		// message fragments
		message []string
	}{
		{name: "running", annotations: on(host), phase: provisioner.ExternalReady},
		{name: "no host recorded", phase: provisioner.ExternalGone, reason: ReasonNotCreated},
		{name: "not on its host", annotations: on("lab2"), phase: provisioner.ExternalGone, reason: ReasonNotFound, message: []string{`lab host "lab2"`}},
		{name: "host removed", annotations: on("lab9"), phase: provisioner.ExternalFailed, reason: ReasonHostRemoved, message: []string{`"lab9"`}},
		{name: "exited", annotations: on(host), phase: provisioner.ExternalFailed, reason: ReasonProcessExited,
			setup:   func() { procs("", "exited") },
			message: []string{`lab host "lab1"`, "exporter exited", "exporter: boom"}},
		{name: "exporter exited 3", annotations: on(host), phase: provisioner.ExternalFailed, reason: ReasonProcessExited,
			setup:   func() { procs("", "exited:3") },
			message: []string{`lab host "lab1"`, "exporter exited with status 3", "exporter: boom"}},
		{name: "exporter exited 0", annotations: on(host), phase: provisioner.ExternalExited, reason: ReasonExporterExited,
			setup:   func() { procs("", "exited:0") },
			message: []string{`lab host "lab1"`, "exporter exited with status 0"}},
		{name: "exporter exited 0, qemu failed", annotations: on(host), phase: provisioner.ExternalExited, reason: ReasonExporterExited,
			setup:   func() { procs("exited:1", "exited:0") },
			message: []string{`lab host "lab1"`, "qemu exited with status 1", "exporter exited with status 0"}},
		{name: "qemu exited 0", annotations: on(host), phase: provisioner.ExternalFailed, reason: ReasonProcessExited,
			setup:   func() { procs("exited:0", "") },
			message: []string{`lab host "lab1"`, "qemu exited with status 0", "qemu: boom"}},
		{name: "unreachable", annotations: on(host), phase: provisioner.ExternalFailed, reason: ReasonHostUnreachable,
			setup: func() {
				lab.host(host).set(func(h *fakeHost) {
					h.dead, h.dialErr = true, &UnreachableError{Host: "lab1", Address: "10.0.0.1:22", Err: errors.New("i/o timeout")}
				})
			},
			message: []string{`lab host "lab1"`, "i/o timeout"}},
		{name: "auth refused", annotations: on(host), phase: provisioner.ExternalFailed, reason: ReasonAuthenticationRefused,
			setup: func() {
				lab.host(host).set(func(h *fakeHost) {
					h.dialErr = &AuthError{Host: "lab1", Address: "10.0.0.1:22", User: "root", Err: errors.New("unable to authenticate")}
				})
			},
			message: []string{`lab host "lab1"`, "unable to authenticate"}},
		{name: "host key mismatch", annotations: on(host), phase: provisioner.ExternalFailed, reason: ReasonHostKeyMismatch,
			setup: func() {
				lab.host(host).set(func(h *fakeHost) {
					h.dialErr = &HostKeyError{Host: "lab1", Address: "10.0.0.1:22", Problem: HostKeyMismatch, Got: "SHA256:got", Want: []string{"SHA256:want"}}
				})
			},
			message: []string{`lab host "lab1"`, "SHA256:got", "SHA256:want"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				tc.setup()
			}
			clock.Add(time.Minute) // forget remembered dial failures
			st, err := p.ObserveExternal(ctx, forInstance(req, "pool-a", tc.annotations))
			if err != nil {
				t.Fatal(err)
			}
			if st.Phase != tc.phase || st.Reason != tc.reason {
				t.Errorf("state %+v, want %s/%s", st, tc.phase, tc.reason)
			}
			for _, m := range tc.message {
				if !strings.Contains(st.Message, m) {
					t.Errorf("message %q does not contain %q", st.Message, m)
				}
			}
		})
	}
	t.Run("errors", func(t *testing.T) {
		cancelled, cancel := context.WithCancel(ctx)
		cancel()
		if st, err := p.ObserveExternal(cancelled, forInstance(req, "pool-a", on(host))); err == nil {
			t.Errorf("observing with a cancelled context: %+v, want an error (it cannot tell)", st)
		}
		bad := forInstance(req, "pool-a", on(host))
		bad.Credentials = map[string][]byte{SecretKeyPrivateKey: []byte("not a key"), SecretKeyKnownHosts: []byte("x")}
		if st, err := p.ObserveExternal(ctx, bad); err == nil || !strings.Contains(err.Error(), SecretKeyPrivateKey) {
			t.Errorf("unparsable credentials: %+v, %v; want an error naming the key", st, err)
		}
	})
}

func TestInventoryExternal(t *testing.T) {
	p, lab, clock, req := fakeProvisioner(t)
	ctx := context.Background()
	create(t, p, clock, req, "pool-a")
	create(t, p, clock, req, "pool-b")
	other := testRequest(t, fakeParams, "lab-ssh", req.Credentials)
	other.Set = other.Set.DeepCopy()
	other.Set.Name = "other"
	create(t, p, clock, other, "other-a")

	list, err := p.InventoryExternal(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]provisioner.ExternalResource{}
	for _, r := range list {
		got[r.Instance] = r
	}
	a, b := got["pool-a"], got["pool-b"]
	if len(list) != 2 || a.InstanceUID != "uid-pool-a" || a.Kind != LabInstanceKind || a.Name != "lab1:/srv/es/team-a_pool/pool-a" ||
		a.Annotations[AnnotationHost] != "lab1" || b.Annotations[AnnotationHost] != "lab2" {
		t.Errorf("inventory %+v, want pool-a on lab1 and pool-b on lab2 only", list)
	}
	lab.host("lab2").set(func(h *fakeHost) {
		h.dead, h.dialErr = true, &UnreachableError{Host: "lab2", Err: errors.New("i/o timeout")}
	})
	if list, err := p.InventoryExternal(ctx, req); err != nil || len(list) != 1 || list[0].Instance != "pool-a" {
		t.Errorf("with lab2 unreachable: %+v, %v; want pool-a only", list, err)
	}
	lab.host("lab1").set(func(h *fakeHost) {
		h.dead, h.dialErr = true, &UnreachableError{Host: "lab1", Err: errors.New("i/o timeout")}
	})
	if list, err := p.InventoryExternal(ctx, req); err == nil || !strings.Contains(err.Error(), `"lab1"`) || !strings.Contains(err.Error(), `"lab2"`) {
		t.Errorf("with no host answering: %+v, %v; want an error naming both", list, err)
	}
}

func TestCleanup(t *testing.T) {
	p, lab, clock, req := fakeProvisioner(t)
	ctx := context.Background()
	a := create(t, p, clock, req, "pool-a")
	b := create(t, p, clock, req, "pool-b")

	retain := forInstance(req, "pool-a", map[string]string{AnnotationHost: a})
	retain.Class = retain.Class.DeepCopy()
	retain.Class.Spec.ReclaimPolicy = vtv1alpha1.ReclaimRetain
	if err := p.Cleanup(ctx, retain); err != nil || lab.host(a).count() != 1 {
		t.Errorf("Cleanup under Retain: %v, %s holds %d; want nil and the instance kept", err, a, lab.host(a).count())
	}
	// Recorded host.
	for i := range 2 {
		if err := p.Cleanup(ctx, forInstance(req, "pool-a", map[string]string{AnnotationHost: a})); err != nil {
			t.Fatalf("Cleanup #%d: %v", i+1, err)
		}
	}
	if lab.host(a).count() != 0 {
		t.Errorf("%s still holds pool-a", a)
	}
	// No host recorded: every host is asked; another UID's directory is left alone.
	stranger := forInstance(req, "pool-b", nil)
	stranger.Exporter.UID = "another-uid"
	if err := p.Cleanup(ctx, stranger); err != nil || lab.host(b).count() != 1 {
		t.Errorf("Cleanup of another UID: %v, %s holds %d; want nil and pool-b kept", err, b, lab.host(b).count())
	}
	lab.host("lab1").set(func(h *fakeHost) {
		h.dead, h.dialErr = true, &UnreachableError{Host: "lab1", Err: errors.New("i/o timeout")}
	})
	err := p.Cleanup(ctx, forInstance(req, "pool-b", nil))
	if err == nil || provisioner.IsInvalid(err) || !strings.Contains(err.Error(), `lab host "lab1"`) {
		t.Errorf("Cleanup with lab1 unreachable: %v, want a transient error naming lab1", err)
	}
	if lab.host(b).count() != 0 {
		t.Errorf("the reachable %s still holds pool-b", b)
	}
	// A host the class no longer lists is not managed: nothing to do.
	if err := p.Cleanup(ctx, forInstance(req, "pool-z", map[string]string{AnnotationHost: "lab9"})); err != nil {
		t.Errorf("Cleanup on a removed host: %v", err)
	}
}
