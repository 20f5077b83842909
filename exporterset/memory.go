package exporterset

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/exporterset/exporterset/exporterset/internal/metrics"
	"k8s.io/apimachinery/pkg/types"
)

// The reconciler remembers a few things between passes, to spare remote calls and CPU and to
// keep what the cache and the API server cannot tell it: a provisioner's description, a
// Validate verdict, the CA bundle, the status it last wrote, its last pass's decisions, the
// creates and retirements the cache may not show yet (expectations.go), the failure count
// and backoff (failurememory.go, pool/backoff.go), the status fields upstream's CRD prunes (pruned.go), the
// start-up samples (startup.go), the metrics' bookkeeping (metrics.go), and per instance its
// enriched drivers, its rendered config (which holds the exporter's token), the Pod it
// started and its failure record. All of it is kept in memos of one memory, one record per
// set, under one rule: an entry lives no longer than what it is about. No store keeps a map
// of sets of its own, so there is one forget and one sweep, and none can be left out.
//
//   - A set's entries go when the set is gone (Reconcile sees NotFound).
//   - An instance's entries go at the first pass of its set that no longer sees the
//     instance (deleted by us or by anyone, released by a Retain reclaim, moved to another
//     set), unless the entry was written after that pass began: the instance reconciler may
//     configure an instance the pass's list does not show yet.
//
// Freshness (how long a description or a CA bundle may be reused) is checked by the reader;
// it is not a second eviction rule.

// memo holds values of one kind, per set (key namespace/name) and per instance of a set
// (key Exporter UID). It is safe for concurrent use.
type memo[V any] struct {
	clock *atomic.Uint64 // shared by a reconciler's memos; orders writes against passes

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

func newMemo[V any](clock *atomic.Uint64) *memo[V] {
	return &memo[V]{clock: clock, sets: map[string]*memoSet[V]{}}
}

func (m *memo[V]) setOf(set string, create bool) *memoSet[V] {
	s := m.sets[set]
	if s == nil && create {
		s = &memoSet[V]{instances: map[types.UID]memoEntry[V]{}}
		m.sets[set] = s
	}
	return s
}

// forSet returns the set's own value.
func (m *memo[V]) forSet(set string) (v V, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.setOf(set, false); s != nil && s.own != nil {
		return s.own.v, true
	}
	return v, false
}

// putSet remembers the set's own value.
func (m *memo[V]) putSet(set string, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setOf(set, true).own = &memoEntry[V]{v: v, write: m.clock.Add(1)}
}

// dropSet forgets the set's own value (not its instances').
func (m *memo[V]) dropSet(set string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.setOf(set, false); s != nil {
		s.own = nil
	}
}

// setOrPut returns the set's own value, remembering a new one first if there is none; the
// check and the put are one step, so goroutines of one pass cannot make two.
func (m *memo[V]) setOrPut(set string, fresh func() V) V {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.setOf(set, true)
	if s.own == nil {
		s.own = &memoEntry[V]{v: fresh(), write: m.clock.Add(1)}
	}
	return s.own.v
}

// instanceOrPut is setOrPut for the instance uid of set.
func (m *memo[V]) instanceOrPut(set string, uid types.UID, fresh func() V) V {
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

// forInstance returns the value of the instance uid of set.
func (m *memo[V]) forInstance(set string, uid types.UID) (v V, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.setOf(set, false); s != nil {
		e, ok := s.instances[uid]
		return e.v, ok
	}
	return v, false
}

// putInstance remembers v for the instance uid of set.
func (m *memo[V]) putInstance(set string, uid types.UID, v V) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.setOf(set, true).instances[uid] = memoEntry[V]{v: v, write: m.clock.Add(1)}
}

// dropInstance forgets the instance uid of set.
func (m *memo[V]) dropInstance(set string, uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s := m.setOf(set, false); s != nil {
		delete(s.instances, uid)
	}
}

// holds reports whether anything of set is remembered.
func (m *memo[V]) holds(set string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	_, ok := m.sets[set]
	return ok
}

// forget drops everything of set.
func (m *memo[V]) forget(set string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sets, set)
}

// sweep drops the instance entries of set that present does not hold and that were written
// before mark (memory.mark, taken when the pass began).
func (m *memo[V]) sweep(set string, present map[types.UID]bool, mark uint64) {
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

// size counts the entries, a set's own and its instances'.
func (m *memo[V]) size() (n int) {
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

// each calls f with every instance entry; f must not use the memo.
func (m *memo[V]) each(f func(set string, uid types.UID, v V)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for set, s := range m.sets {
		for uid, e := range s.instances {
			f(set, uid, e.v)
		}
	}
}

// sweeper is what memory needs of a memo of any value type.
type sweeper interface {
	holds(set string) bool
	forget(set string)
	sweep(set string, present map[types.UID]bool, mark uint64)
	size() int
}

// memory is all a reconciler remembers between passes (see the rule above). A value behind
// a pointer (a set's expectations, failures, metrics) is changed in place only by its set's
// pass, which the workqueue serialises; the memo's lock guards the maps, which every set's
// pass and the instance reconciler share.
type memory struct {
	clock atomic.Uint64
	memos []sweeper // every memo below, enlisted as it is made (register)

	describes  *memo[describeEntry]   // per set: its provisioner's Description
	validated  *memo[validationEntry] // per set: the last Validate verdict
	ca         *memo[caEntry]         // per set: its CA bundle
	own        *memo[ownWrite]        // per set: the status it last wrote
	intents    *memo[*setIntents]     // per set: its last pass's decisions (intents.go)
	instanceEv *memo[*passEvents]     // per set: the instance reconciler's events
	poked      *memo[pokeKey]         // per instance: what it was last poked with
	results    *memo[configureResult] // per instance: what building it last met
	drivers    *memo[driversEntry]    // per instance: enriched drivers
	configs    *memo[configEntry]     // per instance: the rendered config, with its token
	started    *memo[startedPod]      // per instance: the Pod this process created

	credentials *memo[credentialsEntry] // per set: its class's credentials (external provisioners)
	inventory   *memo[time.Time]        // per set: when its external inventory was last swept
	startup     *memo[startupMemory]    // per set: its measured start-up times (startup.go)

	expectations *memo[*setExpectations]  // per set: creates and retirements not yet seen (expectations.go)
	failures     *memo[*setFailures]      // per set: consecutive failures, the backoff (failurememory.go, pool/backoff.go)
	instFailures *memo[*instanceFailures] // per instance: ever ready, failure counted (failurememory.go, pool/backoff.go)
	pruned       *memo[prunedFields]      // per set: status fields upstream's CRD drops (pruned.go)
	metrics      *memo[*metrics.Set]      // per set: the metrics' bookkeeping (metrics.go, slo.go)
	sightings    *memo[hookSighting]      // per instance: a failed lease hook seen on the watch (quarantine_watch.go)
	policies     *memo[policiesEntry]     // per set: its namespace's ExporterAccessPolicies (hardware_policy.go)
}

func newMemory() *memory {
	m := &memory{}
	register(m, &m.describes)
	register(m, &m.validated)
	register(m, &m.ca)
	register(m, &m.own)
	register(m, &m.intents)
	register(m, &m.instanceEv)
	register(m, &m.poked)
	register(m, &m.results)
	register(m, &m.drivers)
	register(m, &m.configs)
	register(m, &m.started)
	register(m, &m.credentials)
	register(m, &m.inventory)
	register(m, &m.startup)
	register(m, &m.expectations)
	register(m, &m.failures)
	register(m, &m.instFailures)
	register(m, &m.pruned)
	register(m, &m.metrics)
	register(m, &m.sightings)
	register(m, &m.policies)
	return m
}

// register makes the memo *field of m and enlists it for forget, sweep and size: a memo is
// made nowhere else, so none can be left out of the rule.
func register[V any](m *memory, field **memo[V]) {
	*field = newMemo[V](&m.clock)
	m.memos = append(m.memos, *field)
}

func (m *memory) all() []sweeper { return m.memos }

// mark is taken when a pass begins; sweep keeps what was written after it.
func (m *memory) mark() uint64 { return m.clock.Load() }

// sweep applies the rule to the instances of set: present holds the UIDs the pass saw.
func (m *memory) sweep(set string, present map[types.UID]bool, mark uint64) {
	for _, s := range m.all() {
		s.sweep(set, present, mark)
	}
}

// forget drops everything of a deleted set.
func (m *memory) forget(set string) {
	for _, s := range m.all() {
		s.forget(set)
	}
}

// size counts every entry of every memo.
func (m *memory) size() (n int) {
	for _, s := range m.all() {
		n += s.size()
	}
	return n
}
