package state

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestMemoSweep: the one eviction rule. An instance entry goes at the first sweep that does
// not see its instance, unless it was written after the sweep's pass began; a set's own
// entry stays until the set is forgotten.
func TestMemoSweep(t *testing.T) {
	mem := NewMemory()
	m := Register[string](mem, "m")
	m.PutSet("ns/a", "a's own")
	m.PutInstance("ns/a", "u1", "one")
	m.PutInstance("ns/a", "u2", "two")
	m.PutInstance("ns/b", "u3", "other set")

	mark := mem.Mark()                                 // a pass of ns/a begins
	m.PutInstance("ns/a", "u4", "instance reconciler") // written meanwhile, for an instance it does not list
	mem.Sweep("ns/a", map[types.UID]bool{"u1": true}, mark)

	for uid, want := range map[types.UID]bool{"u1": true, "u2": false, "u4": true} {
		if _, ok := m.ForInstance("ns/a", uid); ok != want {
			t.Errorf("instance %s remembered=%v, want %v", uid, ok, want)
		}
	}
	if v, ok := m.ForSet("ns/a"); !ok || v != "a's own" {
		t.Errorf("a sweep dropped the set's own entry: %q %v", v, ok)
	}
	if _, ok := m.ForInstance("ns/b", "u3"); !ok {
		t.Error("a sweep of ns/a dropped an entry of ns/b")
	}

	mem.Sweep("ns/a", nil, mem.Mark()) // the next pass does not see u4 either
	if _, ok := m.ForInstance("ns/a", "u4"); ok {
		t.Error("an entry written before the mark survived a sweep that did not see it")
	}
	if got := mem.Size(); got != 2 {
		t.Errorf("size %d, want 2 (a's own, b's instance)", got)
	}

	mem.Forget("ns/a")
	if m.Holds("ns/a") || !m.Holds("ns/b") {
		t.Errorf("forget ns/a: holds a=%v b=%v, want false true", m.Holds("ns/a"), m.Holds("ns/b"))
	}
	mem.Sweep("ns/b", nil, mem.Mark())
	if m.Holds("ns/b") {
		t.Error("a set with nothing left is still held")
	}
}

// TestMemoryReachesEveryMemo: Forget, Sweep, Size and Holding reach every memo registered,
// of any value type.
func TestMemoryReachesEveryMemo(t *testing.T) {
	mem := NewMemory()
	a := Register[int](mem, "a")
	b := Register[string](mem, "b")
	a.PutSet("ns/s", 1)
	b.PutInstance("ns/s", "u", "x")
	if got := mem.Holding("ns/s"); !got["a"] || !got["b"] || len(got) != 2 {
		t.Fatalf("holding %v, want a and b", got)
	}
	mem.Sweep("ns/s", nil, mem.Mark())
	if got := mem.Holding("ns/s"); !got["a"] || got["b"] {
		t.Fatalf("after the sweep holding %v, want a only", got)
	}
	mem.Forget("ns/s")
	if mem.Size() != 0 || mem.Len() != 2 {
		t.Fatalf("after forget: %d entries in %d memos, want 0 in 2", mem.Size(), mem.Len())
	}
}
