package contract

import (
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
	"github.com/exporterset/exporterset/exporterset/internal/state"
)

// TestStartsPod: the one rule of when an instance without a Pod gets one.
func TestStartsPod(t *testing.T) {
	sel := labels.SelectorFromSet(labels.Set{"pool": "a"})
	d := &Intents{Hash: "h1", Selector: sel}
	mine := labels.Set{"pool": "a"}
	for _, c := range []struct {
		name      string
		immediate bool
		it        Intent
		enabled   bool
		hash      string
		labels    labels.Set
		want      bool
	}{
		{"decided by the pass", false, Intent{Start: true}, false, "old", nil, true},
		{"nothing decided, not immediate", false, Intent{}, true, "h1", mine, false},
		{"immediate, current, enabled, selected", true, Intent{}, true, "h1", mine, true},
		{"immediate but disabled", true, Intent{}, false, "h1", mine, false},
		{"immediate but outdated", true, Intent{}, true, "old", mine, false},
		{"immediate but not selected", true, Intent{}, true, "h1", labels.Set{"pool": "b"}, false},
	} {
		d.Immediate = c.immediate
		if got := d.StartsPod(c.it, c.enabled, c.hash, c.labels); got != c.want {
			t.Errorf("%s: StartsPod = %v, want %v", c.name, got, c.want)
		}
	}
	now := time.Unix(1000, 0)
	d.BackoffUntil = now.Add(time.Second)
	if !d.BackingOff(now) || d.BackingOff(now.Add(time.Second)) {
		t.Error("BackingOff does not end at BackoffUntil")
	}
}

// TestBoard: results report a change only when a person would read something different,
// and the instance controller's events move into the pass's batch once.
func TestBoard(t *testing.T) {
	mem := state.NewMemory()
	b := NewBoard(mem)
	if b.PutResult("ns/s", "u", Result{WaitingCred: true}) {
		t.Error("a first result with nothing to say reported a change")
	}
	if !b.PutResult("ns/s", "u", Result{PodErr: errors.New("forbidden")}) {
		t.Error("a Pod error did not report a change")
	}
	if b.PutResult("ns/s", "u", Result{PodErr: errors.New("forbidden"), Version: "v2"}) {
		t.Error("the same error under another version reported a change")
	}
	if !b.PutResult("ns/other", "u", Result{CredMissing: "no token"}) {
		t.Error("a first result with a missing credential did not report a change")
	}
	b.EventsFor("ns/s").Add(eventlog.PodStarted, "a", nil)
	into := &eventlog.Batch{}
	b.TakeEvents("ns/s", into)
	b.TakeEvents("ns/s", into) // taken already: nothing more
	rec := &countRecorder{}
	into.Flush(rec, nil)
	if rec.n != 1 {
		t.Errorf("%d events recorded, want 1", rec.n)
	}
	b.Publish("ns/s", &Intents{Version: "v1"})
	if d, ok := b.Decisions("ns/s"); !ok || d.Version != "v1" {
		t.Fatalf("decisions %v %v, want v1", d, ok)
	}
	b.Withdraw("ns/s")
	if _, ok := b.Decisions("ns/s"); ok {
		t.Error("withdrawn decisions still read")
	}
	if mem.Len() != 3 {
		t.Errorf("the board registered %d memos, want 3", mem.Len())
	}
}

type countRecorder struct{ n int }

func (c *countRecorder) Eventf(_, _ runtime.Object, _, _, _, _ string, _ ...any) { c.n++ }
