package baremetal

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// poolFixture is a connection pool on a fake lab with hosts lab1 and lab2.
type poolFixture struct {
	lab   *fakeLab
	clock *fakeClock
	pool  *connPool
	creds *Credentials
	id    string
	lab1  Host
	lab2  Host
}

func newPoolFixture(t *testing.T) *poolFixture {
	t.Helper()
	data := testCredentials(t, "10.0.0.1", "10.0.0.2")
	creds, err := ParseCredentials(data)
	if err != nil {
		t.Fatal(err)
	}
	f := &poolFixture{lab: newFakeLab("lab1", "lab2"), clock: newFakeClock(), creds: creds, id: credentialsID(data),
		lab1: Host{Name: "lab1", Address: "10.0.0.1", Port: 22}, lab2: Host{Name: "lab2", Address: "10.0.0.2", Port: 22}}
	f.pool = newConnPool(f.lab.dial, f.clock.Now)
	t.Cleanup(func() { _ = f.pool.Close() })
	return f
}

// run runs one status script on h through the pool.
func (f *poolFixture) run(h Host, user, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return f.pool.with(ctx, h, user, f.creds, id, func(r Runner) error {
		_, err := NewMachine(h.Name, r, "/srv/es").Observe(ctx, InstanceRef{Namespace: "ns", Set: "set", Name: "x"})
		return err
	})
}

// counts returns the dials and closes of host name.
func (f *poolFixture) counts(name string) (dials, closes int) {
	h := f.lab.host(name)
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dials, h.closes
}

func TestConnPoolReuse(t *testing.T) {
	f := newPoolFixture(t)
	for range 3 {
		if err := f.run(f.lab1, "root", f.id); err != nil {
			t.Fatal(err)
		}
	}
	if d, c := f.counts("lab1"); d != 1 || c != 0 {
		t.Fatalf("three calls to lab1: %d dials, %d closes; want one connection kept", d, c)
	}
	// Another user, other credentials, another host: each a connection of its own.
	for _, call := range []struct {
		h        Host
		user, id string
	}{{f.lab1, "lab", f.id}, {f.lab1, "root", credentialsID(testCredentials(t, "10.0.0.1"))}, {f.lab2, "root", f.id}} {
		if err := f.run(call.h, call.user, call.id); err != nil {
			t.Fatal(err)
		}
	}
	if d1, _ := f.counts("lab1"); d1 != 3 {
		t.Errorf("lab1 dialled %d times, want 3 (root, another user, other credentials)", d1)
	}
	if d2, _ := f.counts("lab2"); d2 != 1 {
		t.Errorf("lab2 dialled %d times, want 1", d2)
	}
}

func TestConnPoolConcurrentDialOnce(t *testing.T) {
	f := newPoolFixture(t)
	f.lab.dialDelay = 50 * time.Millisecond
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { errs[i] = f.run(f.lab1, "root", f.id) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if d, _ := f.counts("lab1"); d != 1 {
		t.Errorf("8 concurrent calls dialled %d times, want 1", d)
	}
}

func TestConnPoolDropsOnError(t *testing.T) {
	f := newPoolFixture(t)
	if err := f.run(f.lab1, "root", f.id); err != nil {
		t.Fatal(err)
	}
	// The kept connection died (sshd restarted): the call is retried once on a fresh one.
	f.lab.host("lab1").set(func(h *fakeHost) { h.failRuns = 1 })
	if err := f.run(f.lab1, "root", f.id); err != nil {
		t.Fatalf("a dead kept connection must be replaced transparently: %v", err)
	}
	if d, c := f.counts("lab1"); d != 2 || c != 1 {
		t.Fatalf("after a dead kept connection: %d dials, %d closes; want 2 and 1", d, c)
	}
	// When the fresh connection fails too, the error is the host's: it is returned, both
	// connections are closed, and the next call dials again.
	f.lab.host("lab1").set(func(h *fakeHost) { h.failRuns = 2 })
	err := f.run(f.lab1, "root", f.id)
	var ue *UnreachableError
	if !errors.As(err, &ue) || ue.Host != "lab1" {
		t.Fatalf("err = %v, want an unreachable error naming lab1", err)
	}
	if d, c := f.counts("lab1"); d != 3 || c != 3 {
		t.Fatalf("after two failing connections: %d dials, %d closes; want 3 and 3", d, c)
	}
	if err := f.run(f.lab1, "root", f.id); err != nil {
		t.Fatal(err)
	}
	if d, _ := f.counts("lab1"); d != 4 {
		t.Errorf("the call after a failure dialled %d times in all, want 4", d)
	}
}

func TestConnPoolDeadHost(t *testing.T) {
	f := newPoolFixture(t)
	if err := f.run(f.lab1, "root", f.id); err != nil {
		t.Fatal(err)
	}
	// The host goes away silently: a command on the kept connection would hang, but the
	// keepalive finds the connection dead first, the redial fails, and the failure is
	// remembered for a while. All that well before the caller's deadline, so that the
	// caller can still report it.
	f.lab.host("lab1").set(func(h *fakeHost) {
		h.dead, h.hang = true, true
		h.dialErr = &UnreachableError{Host: "lab1", Address: "10.0.0.1:22", Err: errors.New("i/o timeout")}
	})
	var ue *UnreachableError
	t0 := time.Now()
	if err := f.run(f.lab1, "root", f.id); !errors.As(err, &ue) || ue.Host != "lab1" || time.Since(t0) > 2*time.Second {
		t.Fatalf("err = %v after %v, want an unreachable error naming lab1 at once", err, time.Since(t0))
	}
	d, c := f.counts("lab1")
	if d != 2 || c != 1 {
		t.Fatalf("dead host: %d dials, %d closes; want the kept connection closed and one redial", d, c)
	}
	if err := f.run(f.lab1, "root", f.id); !errors.As(err, &ue) {
		t.Fatalf("second call: %v, want the remembered unreachable error", err)
	}
	if d2, _ := f.counts("lab1"); d2 != d {
		t.Errorf("a host whose dial just failed was dialled again (%d dials, want %d)", d2, d)
	}
	f.lab.host("lab1").set(func(h *fakeHost) { h.dead, h.hang, h.dialErr = false, false, nil })
	f.clock.Add(connDownFor)
	if err := f.run(f.lab1, "root", f.id); err != nil {
		t.Fatalf("after %v the host must be dialled again: %v", connDownFor, err)
	}
	// A refused key is not remembered: it is final anyway, and a fixed Secret is a new key.
	f.lab.host("lab2").set(func(h *fakeHost) {
		h.dialErr = &AuthError{Host: "lab2", User: "root", Err: errors.New("unable to authenticate")}
	})
	for range 2 {
		if err := f.run(f.lab2, "root", f.id); err == nil {
			t.Fatal("dial error swallowed")
		}
	}
	if d, _ := f.counts("lab2"); d != 2 {
		t.Errorf("lab2 refusing the key was dialled %d times for 2 calls, want 2", d)
	}
}

func TestConnPoolIdleAndClose(t *testing.T) {
	f := newPoolFixture(t)
	if err := f.run(f.lab1, "root", f.id); err != nil {
		t.Fatal(err)
	}
	if err := f.run(f.lab2, "root", f.id); err != nil {
		t.Fatal(err)
	}
	f.clock.Add(connIdleTimeout - time.Second)
	if err := f.run(f.lab2, "root", f.id); err != nil { // lab2 is used again
		t.Fatal(err)
	}
	f.clock.Add(time.Second)
	f.pool.sweep()
	if _, c := f.counts("lab1"); c != 1 {
		t.Errorf("lab1 idle for %v: %d closes, want 1", connIdleTimeout, c)
	}
	if _, c := f.counts("lab2"); c != 0 {
		t.Errorf("lab2 used a second ago was closed")
	}
	if err := f.run(f.lab1, "root", f.id); err != nil {
		t.Fatal(err)
	}
	if d, _ := f.counts("lab1"); d != 2 {
		t.Errorf("lab1 after its idle close: %d dials, want 2", d)
	}
	if err := f.pool.Close(); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"lab1", "lab2"} {
		if d, c := f.counts(n); c != d {
			t.Errorf("%s after Close: %d dials, %d closes", n, d, c)
		}
	}
	if err := f.run(f.lab1, "root", f.id); !errors.Is(err, errPoolClosed) {
		t.Errorf("after Close: %v, want errPoolClosed", err)
	}
}

func TestConnPoolHungRunBoundedByContext(t *testing.T) {
	f := newPoolFixture(t)
	f.pool.runGrace = 50 * time.Millisecond
	f.lab.host("lab1").set(func(h *fakeHost) { h.hang = true })
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	t0 := time.Now()
	err := f.pool.with(ctx, f.lab1, "root", f.creds, f.id, func(r Runner) error {
		_, _, err := r.Run(ctx, []string{"sh", "-c", "x", "status", "/srv/es/ns_set/x"}, nil)
		return err
	})
	if !isUnreachable(err) || time.Since(t0) > 3*time.Second {
		t.Fatalf("a command hung on a dead connection returned %v after %v, want an unreachable error soon after the deadline", err, time.Since(t0))
	}
	if _, c := f.counts("lab1"); c != 1 {
		t.Errorf("the hung connection was not closed (%d closes)", c)
	}
}

// A command whose context has no deadline (as the controller's passes give) is bounded
// all the same: a host gone while it ran must not hold the caller until TCP gives up.
func TestConnPoolHungRunBoundedWithoutDeadline(t *testing.T) {
	f := newPoolFixture(t)
	f.pool.runGrace = 50 * time.Millisecond
	f.pool.commandTimeout = 100 * time.Millisecond
	f.lab.host("lab1").set(func(h *fakeHost) { h.hang = true })
	t0 := time.Now()
	err := f.pool.with(context.Background(), f.lab1, "root", f.creds, f.id, func(r Runner) error {
		_, _, err := r.Run(context.Background(), []string{"sh", "-c", "x", "status", "/srv/es/ns_set/x"}, nil)
		return err
	})
	if !isUnreachable(err) || time.Since(t0) > 3*time.Second {
		t.Fatalf("a command hung on a dead connection, no deadline given, returned %v after %v, want an unreachable error within the command timeout", err, time.Since(t0))
	}
}
