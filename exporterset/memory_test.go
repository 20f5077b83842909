package exporterset

import (
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/internal/metrics"
	"k8s.io/apimachinery/pkg/types"
)

// TestMemoSweep: the one eviction rule. An instance entry goes at the first sweep that does
// not see its instance, unless it was written after the sweep's pass began; a set's own
// entry stays until the set is forgotten.
func TestMemoSweep(t *testing.T) {
	var clock atomic.Uint64
	m := newMemo[string](&clock)
	m.putSet("ns/a", "a's own")
	m.putInstance("ns/a", "u1", "one")
	m.putInstance("ns/a", "u2", "two")
	m.putInstance("ns/b", "u3", "other set")

	mark := clock.Load()                               // a pass of ns/a begins
	m.putInstance("ns/a", "u4", "instance reconciler") // written meanwhile, for an instance it does not list
	m.sweep("ns/a", map[types.UID]bool{"u1": true}, mark)

	for uid, want := range map[types.UID]bool{"u1": true, "u2": false, "u4": true} {
		if _, ok := m.forInstance("ns/a", uid); ok != want {
			t.Errorf("instance %s remembered=%v, want %v", uid, ok, want)
		}
	}
	if v, ok := m.forSet("ns/a"); !ok || v != "a's own" {
		t.Errorf("a sweep dropped the set's own entry: %q %v", v, ok)
	}
	if _, ok := m.forInstance("ns/b", "u3"); !ok {
		t.Error("a sweep of ns/a dropped an entry of ns/b")
	}

	m.sweep("ns/a", nil, clock.Load()) // the next pass does not see u4 either
	if _, ok := m.forInstance("ns/a", "u4"); ok {
		t.Error("an entry written before the mark survived a sweep that did not see it")
	}
	if got := m.size(); got != 2 {
		t.Errorf("size %d, want 2 (a's own, b's instance)", got)
	}

	m.forget("ns/a")
	if m.holds("ns/a") || !m.holds("ns/b") {
		t.Errorf("forget ns/a: holds a=%v b=%v, want false true", m.holds("ns/a"), m.holds("ns/b"))
	}
	m.sweep("ns/b", nil, clock.Load())
	if m.holds("ns/b") {
		t.Error("a set with nothing left is still held")
	}
}

// TestMemoryForgetsEveryMemo: memory.forget and sweep reach every memo, so a memo added
// later cannot be left out of the rule.
func TestMemoryForgetsEveryMemo(t *testing.T) {
	m := newMemory()
	memos := 0
	v := reflect.ValueOf(m).Elem()
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).Type().Implements(reflect.TypeFor[sweeper]()) {
			memos++
		}
	}
	if memos != len(m.all()) {
		t.Fatalf("memory has %d memos, memory.all lists %d", memos, len(m.all()))
	}
	m.describes.putSet("ns/s", describeEntry{})
	m.validated.putSet("ns/s", validationEntry{})
	m.ca.putSet("ns/s", caEntry{})
	m.own.putSet("ns/s", ownWrite{})
	m.intents.putSet("ns/s", &setIntents{})
	m.instanceEv.putSet("ns/s", &passEvents{})
	m.poked.putInstance("ns/s", "u", pokeKey{})
	m.results.putInstance("ns/s", "u", configureResult{})
	m.drivers.putInstance("ns/s", "u", driversEntry{})
	m.configs.putInstance("ns/s", "u", configEntry{yaml: []byte("token: secret")})
	m.podStarted("ns/s", "u", fixture.Epoch)
	m.credentials.putSet("ns/s", credentialsEntry{data: map[string][]byte{"kubeconfig": []byte("secret")}})
	m.inventory.putSet("ns/s", fixture.Epoch)
	m.startup.putSet("ns/s", startupMemory{})
	m.expectations.putSet("ns/s", newSetExpectations())
	m.failures.putSet("ns/s", &setFailures{})
	m.instFailures.putInstance("ns/s", "u", &instanceFailures{everReady: true})
	m.pruned.putSet("ns/s", prunedFields{sequence: 7})
	m.metrics.putSet("ns/s", &metrics.Set{})
	m.sightings.putInstance("ns/s", "u", hookSighting{})
	m.policies.putSet("ns/s", policiesEntry{ok: true})
	if got, want := m.size(), len(m.all()); got != want {
		t.Fatalf("%d entries, want one per memo (%d): a memo is missing from memory.all", got, want)
	}
	m.sweep("ns/s", nil, m.mark())
	if got := m.size(); got != 14 {
		t.Errorf("after the instance's sweep: %d entries, want the 14 set entries", got)
	}
	m.forget("ns/s")
	if got := m.size(); got != 0 {
		t.Errorf("after forget: %d entries, want 0", got)
	}
}
