// Package state holds what the controllers remember between reconciles, under one rule: an
// entry lives no longer than what it is about. Every memo is made by Register on the one
// Memory the controllers share, so a set's forget and the sweep of its instances reach
// every memo, whichever controller keeps it, and none can be left out.
//
//   - A set's entries go when the set is gone (Forget).
//   - An instance's entries go at the first pass of its set that no longer sees the
//     instance (Sweep), unless the entry was written after that pass began (Mark): the
//     instance controller may build an instance the pass's list does not show yet.
//
// Freshness (how long a description or a CA bundle may be reused) is checked by the reader;
// it is not a second eviction rule.
package state

import (
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/types"
)

// Memo holds values of one kind, per set (key namespace/name) and per instance of a set
// (key Exporter UID). It is safe for concurrent use. Make one with Register.
type Memo[V any] struct {
	clock *atomic.Uint64 // shared by a Memory's memos; orders writes against passes

	mu   sync.Mutex
	sets map[string]*memoSet[V]
}

type memoSet[V any] struct {
	own       *memoEntry[V]
	instances map[types.UID]memoEntry[V]
}

type memoEntry[V any] struct {
	v     V
	write uint64 // the memo clock when written
}

func (m *Memo[V]) setOf(set string, create bool) *memoSet[V] {
	s := m.sets[set]
	if s == nil && create {
		s = &memoSet[V]{instances: map[types.UID]memoEntry[V]{}}
		m.sets[set] = s
	}
	return s
}

// ForSet returns the set's own value.
func (m *Memo[V]) ForSet(set string) (v V, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.setOf(set, false); s != nil && s.own != nil {
		return s.own.v, true
	}
	return v, false
}

// PutSet remembers the set's own value.
func (m *Memo[V]) PutSet(set string, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setOf(set, true).own = &memoEntry[V]{v: v, write: m.clock.Add(1)}
}

// DropSet forgets the set's own value (not its instances').
func (m *Memo[V]) DropSet(set string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.setOf(set, false); s != nil {
		s.own = nil
	}
}

// SetOrPut returns the set's own value, remembering a new one first if there is none; the
// check and the put are one step, so goroutines of one pass cannot make two.
func (m *Memo[V]) SetOrPut(set string, fresh func() V) V {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.setOf(set, true)
	if s.own == nil {
		s.own = &memoEntry[V]{v: fresh(), write: m.clock.Add(1)}
	}
	return s.own.v
}

// InstanceOrPut is SetOrPut for the instance uid of set.
func (m *Memo[V]) InstanceOrPut(set string, uid types.UID, fresh func() V) V {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.setOf(set, true)
	e, ok := s.instances[uid]
	if !ok {
		e = memoEntry[V]{v: fresh(), write: m.clock.Add(1)}
		s.instances[uid] = e
	}
	return e.v
}

// ForInstance returns the value of the instance uid of set.
func (m *Memo[V]) ForInstance(set string, uid types.UID) (v V, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.setOf(set, false); s != nil {
		e, ok := s.instances[uid]
		return e.v, ok
	}
	return v, false
}

// PutInstance remembers v for the instance uid of set.
func (m *Memo[V]) PutInstance(set string, uid types.UID, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setOf(set, true).instances[uid] = memoEntry[V]{v: v, write: m.clock.Add(1)}
}

// DropInstance forgets the instance uid of set.
func (m *Memo[V]) DropInstance(set string, uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.setOf(set, false); s != nil {
		delete(s.instances, uid)
	}
}

// Holds reports whether anything of set is remembered.
func (m *Memo[V]) Holds(set string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.sets[set]
	return ok
}

// Forget drops everything of set.
func (m *Memo[V]) Forget(set string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sets, set)
}

// Sweep drops the instance entries of set that present does not hold and that were written
// before mark (Memory.Mark, taken when the pass began).
func (m *Memo[V]) Sweep(set string, present map[types.UID]bool, mark uint64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.setOf(set, false)
	if s == nil {
		return
	}
	for uid, e := range s.instances {
		if !present[uid] && e.write <= mark {
			delete(s.instances, uid)
		}
	}
	if s.own == nil && len(s.instances) == 0 {
		delete(m.sets, set)
	}
}

// Size counts the entries, a set's own and its instances'.
func (m *Memo[V]) Size() (n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, s := range m.sets {
		n += len(s.instances)
		if s.own != nil {
			n++
		}
	}
	return n
}

// Each calls f with every instance entry; f must not use the memo.
func (m *Memo[V]) Each(f func(set string, uid types.UID, v V)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for set, s := range m.sets {
		for uid, e := range s.instances {
			f(set, uid, e.v)
		}
	}
}

// InstancesOf lists the instances of set that have an entry.
func (m *Memo[V]) InstancesOf(set string) (out []types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.setOf(set, false); s != nil {
		for uid := range s.instances {
			out = append(out, uid)
		}
	}
	return out
}
