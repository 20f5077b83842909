//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// The watch of TestLeasesNeverRefusedOnRealCore (neverrefused_test.go): every write to a
// namespace's Exporters and Leases, so a refusal or a moment without an enabled Exporter
// between two polls is not missed.

// setWatch follows a namespace's Exporters and Leases through watches started before the
// set exists: the Exporters of the set alive at once (ADDED until DELETED), whether the set
// was ever left without an enabled one once it had one and, per Lease, when it was first seen
// assigned and whether it was ever Unsatisfiable.
type setWatch struct {
	set    string
	mu     sync.Mutex
	live   map[string]bool
	most   int
	mostAt string
	// enabled are the Exporters upstream's lease controller counts: present (ADDED until
	// DELETED, a deletionTimestamp does not matter to it) and spec.enabled not false.
	enabled map[string]bool
	// gap is the first moment the set had no enabled Exporter after having one.
	gap    string
	leases map[string]*leaseSeen
	broken error
}

// leaseSeen is what the watch saw of one Lease.
type leaseSeen struct {
	assigned      time.Time
	exporter      string
	unsatisfiable string // the conditions when Unsatisfiable=True was first seen
	ended         bool
	conditions    string // the latest
}

// watchSet starts watching ns for the set named until the test ends.
func watchSet(t *testing.T, ns, set string) *setWatch {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	w := &setWatch{set: set, live: map[string]bool{}, enabled: map[string]bool{}, leases: map[string]*leaseSeen{}}
	for _, list := range []client.ObjectList{&jsv1.ExporterList{}, &jsv1.LeaseList{}} {
		// The first watch is open before this returns, so nothing the set does is missed.
		wi, err := wc.Watch(wctx, list, client.InNamespace(ns))
		if err != nil {
			t.Fatal(err)
		}
		go w.follow(wctx, wi)
	}
	return w
}

// follow handles wi's events until the test ends. The API server closes a watch after 30
// minutes at the earliest, longer than these scenarios; a watch that ends sooner is reported
// as broken, since the events after it would be missed.
func (w *setWatch) follow(ctx context.Context, wi watch.Interface) {
	defer wi.Stop()
	for ev := range wi.ResultChan() {
		if ev.Type == watch.Error {
			w.fail(fmt.Errorf("watch error: %v", ev.Object))
			continue
		}
		w.observe(ev)
	}
	if ctx.Err() == nil {
		w.fail(fmt.Errorf("the API server closed the watch"))
	}
}

func (w *setWatch) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken == nil {
		w.broken = err
	}
}

func (w *setWatch) observe(ev watch.Event) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch o := ev.Object.(type) {
	case *jsv1.Exporter:
		// The set's from its ADDED until its DELETED (or until the set lets it go).
		had := len(w.enabled) > 0
		in := ev.Type != watch.Deleted && ownedBySet(o, w.set)
		setMember(w.live, o.Name, in)
		setMember(w.enabled, o.Name, in && o.IsEnabled())
		now := time.Now().Format("15:04:05.000")
		if len(w.live) > w.most {
			w.most, w.mostAt = len(w.live), fmt.Sprintf("%v at %s", w.live, now)
		}
		if had && len(w.enabled) == 0 && w.gap == "" {
			w.gap = fmt.Sprintf("at %s, when Exporter %s was %s (enabled %v)", now, o.Name, strings.ToLower(string(ev.Type)), o.IsEnabled())
		}
	case *jsv1.Lease:
		s := w.leases[o.Name]
		if s == nil {
			s = &leaseSeen{}
			w.leases[o.Name] = s
		}
		s.conditions, s.ended = leaseConditions(o), o.Status.Ended
		if o.Status.ExporterRef != nil && s.assigned.IsZero() {
			s.assigned, s.exporter = time.Now(), o.Status.ExporterRef.Name
		}
		if apimeta.IsStatusConditionTrue(o.Status.Conditions, jsv1.LeaseConditionUnsatisfiable) && s.unsatisfiable == "" {
			s.unsatisfiable = s.conditions
		}
	}
}

// waitAssigned waits until the watch saw the lease assigned and returns when and to which
// Exporter. A lease seen Unsatisfiable, or ended without an exporter, fails the test at once.
func (w *setWatch) waitAssigned(t *testing.T, lease string, timeout time.Duration) (time.Time, string) {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(50 * time.Millisecond) {
		w.mu.Lock()
		s, broken := w.leases[lease], w.broken
		var seen leaseSeen
		if s != nil {
			seen = *s
		}
		w.mu.Unlock()
		switch {
		case broken != nil:
			t.Fatalf("the watch of Exporters and Leases broke: %v", broken)
		case seen.unsatisfiable != "":
			t.Fatalf("lease %s ended Unsatisfiable while the set had room (issue 38): %s", lease, seen.unsatisfiable)
		case !seen.assigned.IsZero():
			return seen.assigned, seen.exporter
		case seen.ended:
			t.Fatalf("lease %s ended without an exporter: %s", lease, seen.conditions)
		case time.Now().After(deadline):
			t.Fatalf("lease %s not assigned in %s: conditions %s", lease, timeout, seen.conditions)
		}
	}
}

// checkNoRefusal fails the test for every lease the watch ever saw Unsatisfiable.
func (w *setWatch) checkNoRefusal(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.broken != nil {
		t.Errorf("the watch of Exporters and Leases broke: %v", w.broken)
	}
	for name, s := range w.leases {
		if s.unsatisfiable != "" {
			t.Errorf("lease %s was Unsatisfiable while the set had room (issue 38): %s", name, s.unsatisfiable)
		}
	}
}

// checkExporters fails the test if the watch saw more than ceiling Exporters of the set
// alive at once, or the set without an enabled Exporter after it had one (issue 38's
// invariant: a lease arriving then would be refused), and logs the most it saw. A cleanup,
// it reports also after a failed lease.
func (w *setWatch) checkExporters(t *testing.T, ceiling int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.most > ceiling {
		t.Errorf("the set held %d Exporters at once (%s), want at most its maxReplicas %d", w.most, w.mostAt, ceiling)
	}
	if w.gap != "" {
		t.Errorf("the set was left without an enabled Exporter %s: a lease then would be refused (issue 38)", w.gap)
	}
	t.Logf("at most %d Exporters of the set at once (%s)", w.most, w.mostAt)
}

// leaseConditions quotes a Lease's conditions (type=status/reason/"message"), its exporter
// and whether it ended.
func leaseConditions(l *jsv1.Lease) string {
	var b strings.Builder
	for _, c := range l.Status.Conditions {
		fmt.Fprintf(&b, "%s=%s/%s/%q ", c.Type, c.Status, c.Reason, c.Message)
	}
	ref := ""
	if l.Status.ExporterRef != nil {
		ref = l.Status.ExporterRef.Name
	}
	fmt.Fprintf(&b, "exporterRef %q ended %v", ref, l.Status.Ended)
	return b.String()
}

// setMember puts name into m or takes it out.
func setMember(m map[string]bool, name string, in bool) {
	if in {
		m[name] = true
	} else {
		delete(m, name)
	}
}
