package exporterset

import (
	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// What a Reconciler remembers, for the tests of its memory (internal/state); compiled into
// tests only.

// MemoryEntries counts every entry of every memo of r.
func MemoryEntries(r *Reconciler) int { return r.mem.Size() }

// RememberedInstances returns the instance UIDs any memo of r holds for the set key.
func RememberedInstances(r *Reconciler, set string) map[types.UID]bool {
	return r.mem.Instances(set)
}

// RememberedConfigs returns every rendered exporter config r holds (they carry tokens).
func RememberedConfigs(r *Reconciler) [][]byte { return r.instances.RenderedConfigs() }

// RemembersSet reports whether any memo of r holds anything of the set key.
func RemembersSet(r *Reconciler, set string) bool { return len(r.mem.Holding(set)) > 0 }

// StoresRemembering names the memos of r (expectations, failures, pruned, metrics,
// startup, ...) that hold anything of the set key.
func StoresRemembering(r *Reconciler, set string) map[string]bool { return r.mem.Holding(set) }

// Test knobs: not part of the package's API.

// WithClock replaces the wall clock, for tests of the cooldown.
func WithClock(c clock.PassiveClock) Option { return func(o *options) { o.set.Clock = c } }

// WithExpectations turns the in-memory create expectations on (the default) or off. Off
// leaves only the deterministic instance names to stop a stale cache from over-creating;
// tests use it to show each safeguard alone.
func WithExpectations(on bool) Option { return func(o *options) { o.set.UseExpectations = on } }

// Event reasons and labels the external tests look for.
const (
	EventCreated          = eventlog.Created
	EventDriverWarning    = eventlog.DriverWarning
	EventProvisionerError = eventlog.ProvisionerError
	EventWaiting          = eventlog.Waiting
	UpstreamLabelSet      = objects.UpstreamLabelSet
)
