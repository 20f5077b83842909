package exporterset

import (
	"reflect"
	"unsafe"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// What a Reconciler remembers, for the tests of its memory (memory.go); compiled into tests
// only.

// MemoryEntries counts every entry of every memo of r.
func MemoryEntries(r *Reconciler) int { return r.memory.size() }

// RememberedInstances returns the instance UIDs any memo of r holds for the set key.
func RememberedInstances(r *Reconciler, set string) map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, m := range []interface {
		each(func(string, types.UID, any))
	}{anyMemo[driversEntry]{r.memory.drivers}, anyMemo[configEntry]{r.memory.configs}, anyMemo[startedPod]{r.memory.started},
		anyMemo[*instanceFailures]{r.memory.instFailures}} {
		m.each(func(s string, uid types.UID, _ any) {
			if s == set {
				out[uid] = true
			}
		})
	}
	return out
}

// RememberedConfigs returns every rendered exporter config r holds (they carry tokens).
func RememberedConfigs(r *Reconciler) (out [][]byte) {
	r.memory.configs.each(func(_ string, _ types.UID, c configEntry) { out = append(out, c.yaml) })
	return out
}

// RemembersSet reports whether any memo of r holds anything of the set key.
func RemembersSet(r *Reconciler, set string) bool {
	for _, s := range r.memory.all() {
		if s.holds(set) {
			return true
		}
	}
	return false
}

// StoresRemembering names the memos of r (memory's fields: expectations, failures, pruned,
// metrics, startup, ...) that hold anything of the set key.
func StoresRemembering(r *Reconciler, set string) map[string]bool {
	out := map[string]bool{}
	v := reflect.ValueOf(r.memory).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		if !f.Type().Implements(reflect.TypeFor[sweeper]()) {
			continue
		}
		// Every field, not memory.all(): a memo left out of all() is found too. The fields
		// are unexported, so they are read through their address.
		s := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Interface().(sweeper)
		if s.holds(set) {
			out[v.Type().Field(i).Name] = true
		}
	}
	return out
}

type anyMemo[V any] struct{ m *memo[V] }

func (a anyMemo[V]) each(f func(string, types.UID, any)) {
	a.m.each(func(s string, uid types.UID, v V) { f(s, uid, v) })
}

// Test knobs: not part of the package's API.

// WithClock replaces the wall clock, for tests of the cooldown.
func WithClock(c clock.PassiveClock) Option { return func(r *Reconciler) { r.clock = c } }

// WithExpectations turns the in-memory create expectations on (the default) or off. Off
// leaves only the deterministic instance names to stop a stale cache from over-creating;
// tests use it to show each safeguard alone.
func WithExpectations(on bool) Option { return func(r *Reconciler) { r.useExpectations = on } }

// Event reasons and labels the external tests look for.
const (
	EventCreated          = eventCreated
	EventDriverWarning    = eventDriverWarning
	EventProvisionerError = eventProvisionerError
	EventWaiting          = eventWaiting
	UpstreamLabelSet      = upstreamLabelSet
)

// CeilingOf is ceilingOf (budgetgov.go), for its table test.
var CeilingOf = ceilingOf
