package state

import (
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
)

// Store is what Memory needs of a memo of any value type.
type Store interface {
	Holds(set string) bool
	Forget(set string)
	Sweep(set string, present map[types.UID]bool, mark uint64)
	Size() int
	InstancesOf(set string) []types.UID
}

// Memory is every memo the controllers keep, each enlisted under a name as Register makes
// it. A value behind a pointer is changed in place only by the one controller that owns
// it; the memos' locks guard their maps, which every reconcile shares.
type Memory struct {
	clock atomic.Uint64
	names []string
	memos []Store
}

// NewMemory returns an empty Memory.
func NewMemory() *Memory { return &Memory{} }

// Register makes a memo of m named name (for tests and diagnostics) and enlists it for
// Forget, Sweep and Size: memos are made nowhere else, so none can escape the rule.
func Register[V any](m *Memory, name string) *Memo[V] {
	memo := &Memo[V]{clock: &m.clock, sets: map[string]*memoSet[V]{}}
	m.names = append(m.names, name)
	m.memos = append(m.memos, memo)
	return memo
}

// Mark is taken when a pass begins; Sweep keeps what was written after it.
func (m *Memory) Mark() uint64 { return m.clock.Load() }

// Sweep applies the rule to the instances of set: present holds the UIDs the pass saw.
func (m *Memory) Sweep(set string, present map[types.UID]bool, mark uint64) {
	for _, s := range m.memos {
		s.Sweep(set, present, mark)
	}
}

// Forget drops everything of a deleted set.
func (m *Memory) Forget(set string) {
	for _, s := range m.memos {
		s.Forget(set)
	}
}

// Size counts every entry of every memo.
func (m *Memory) Size() (n int) {
	for _, s := range m.memos {
		n += s.Size()
	}
	return n
}

// Len is the number of memos registered.
func (m *Memory) Len() int { return len(m.memos) }

// Holding names the memos that hold anything of set.
func (m *Memory) Holding(set string) map[string]bool {
	out := map[string]bool{}
	for i, s := range m.memos {
		if s.Holds(set) {
			out[m.names[i]] = true
		}
	}
	return out
}

// Registered reports whether s is one of m's memos.
func (m *Memory) Registered(s Store) bool {
	for _, x := range m.memos {
		if x == s {
			return true
		}
	}
	return false
}

// Instances returns the instance UIDs any memo holds for set.
func (m *Memory) Instances(set string) map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, s := range m.memos {
		for _, uid := range s.InstancesOf(set) {
			out[uid] = true
		}
	}
	return out
}
