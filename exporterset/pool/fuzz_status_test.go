package pool_test

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// statusPodPhases are the phases a fuzzed Pod can have, the empty one (not yet reported) too.
var statusPodPhases = []corev1.PodPhase{"", corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed, corev1.PodUnknown}

// instancesFromBytes decodes a pool: two bytes per instance, the first a set of traits, the
// second its Pods (up to three, each phase from three bits).
func instancesFromBytes(data []byte) []*pool.Instance {
	var out []*pool.Instance
	for i := 0; i+1 < len(data) && len(out) < 64; i += 2 {
		a, b := data[i], data[i+1]
		var traits []fixture.Trait
		for bit, tr := range []fixture.Trait{fixture.Online, fixture.Registered, fixture.Disabled, fixture.Retiring, fixture.Deleting} {
			if a&(1<<bit) != 0 {
				traits = append(traits, tr)
			}
		}
		if a&(1<<5) != 0 {
			traits = append(traits, fixture.Leased(fmt.Sprint("l", i)))
		}
		for k := 0; k < int(b&3); k++ {
			traits = append(traits, fixture.Pod(statusPodPhases[int(b>>(2+k*2))%len(statusPodPhases)]))
		}
		out = append(out, fixture.Instance(fmt.Sprint("i", i/2), traits...))
	}
	return out
}

// addCounts adds the counters of b to a (conditions, selector and clocks are not counters).
func addCounts(a, b pool.Counts) pool.Counts {
	a.Replicas += b.Replicas
	a.ReadyReplicas += b.ReadyReplicas
	a.AvailableReplicas += b.AvailableReplicas
	a.LeasedReplicas += b.LeasedReplicas
	a.UnavailableReplicas += b.UnavailableReplicas
	a.RestingReplicas += b.RestingReplicas
	a.ExportersActive += b.ExportersActive
	a.ExportersIdle += b.ExportersIdle
	a.ExportersDisabled += b.ExportersDisabled
	a.ExportersOffline += b.ExportersOffline
	a.PodsPending += b.PodsPending
	a.PodsRunning += b.PodsRunning
	a.PodsFailed += b.PodsFailed
	a.PodsUnknown += b.PodsUnknown
	return a
}

// checkStatusInvariants checks the relations between the counters that follow from their
// definitions (see ComputeStatus), whatever the pool.
func checkStatusInvariants(t *testing.T, in []*pool.Instance, s pool.Counts) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("%s\nstatus: %+v", fmt.Sprintf(format, args...), s)
	}
	var pods, enabled, enabledOnlineLeased int32
	for _, i := range in {
		pods += int32(len(i.Pods))
		if i.Enabled() {
			enabled++
			if i.Online() && i.Leased() {
				enabledOnlineLeased++
			}
		}
	}
	if s.Replicas != int32(len(in)) {
		fail("replicas %d for %d instances", s.Replicas, len(in))
	}
	if s.ReadyReplicas > s.Replicas || s.LeasedReplicas > s.Replicas {
		fail("ready or leased above replicas")
	}
	if s.AvailableReplicas > s.ReadyReplicas {
		fail("available %d > ready %d", s.AvailableReplicas, s.ReadyReplicas)
	}
	if s.AvailableReplicas+s.LeasedReplicas > s.Replicas {
		fail("available %d + leased %d > replicas %d: an instance is both", s.AvailableReplicas, s.LeasedReplicas, s.Replicas)
	}
	if s.AvailableReplicas > s.ExportersIdle {
		fail("available %d > idle %d: an available exporter is online, enabled and unleased", s.AvailableReplicas, s.ExportersIdle)
	}
	if s.ExportersActive > s.LeasedReplicas {
		fail("active %d > leased %d", s.ExportersActive, s.LeasedReplicas)
	}
	if s.ExportersActive+s.ExportersIdle > s.Replicas {
		fail("active %d + idle %d > replicas %d", s.ExportersActive, s.ExportersIdle, s.Replicas)
	}
	if s.ExportersDisabled+enabled != s.Replicas {
		fail("disabled %d + enabled %d != replicas %d", s.ExportersDisabled, enabled, s.Replicas)
	}
	// An enabled exporter is offline, or online and then idle (unleased) or leased.
	if s.ExportersOffline+s.ExportersIdle+enabledOnlineLeased != enabled {
		fail("offline %d + idle %d + online leased %d != enabled %d", s.ExportersOffline, s.ExportersIdle, enabledOnlineLeased, enabled)
	}
	// An enabled exporter is ready or unavailable; a ready enabled one is leased or available.
	if s.UnavailableReplicas > enabled || s.AvailableReplicas > enabled-s.UnavailableReplicas {
		fail("unavailable %d, available %d for %d enabled", s.UnavailableReplicas, s.AvailableReplicas, enabled)
	}
	if s.UnavailableReplicas < s.ExportersOffline {
		fail("unavailable %d < offline %d: an offline exporter is not ready", s.UnavailableReplicas, s.ExportersOffline)
	}
	// A resting instance is enabled.
	if s.RestingReplicas > enabled {
		fail("resting %d of %d enabled", s.RestingReplicas, enabled)
	}
	if got := s.PodsPending + s.PodsRunning + s.PodsFailed + s.PodsUnknown; got != pods {
		fail("pods by phase sum to %d, there are %d", got, pods)
	}
}

// FuzzComputeStatus checks the status math on arbitrary pools: the relations between the
// counters, that the counts do not depend on the order of the instances, that they add up
// over a split pool, and that ComputeStatus changes nothing.
func FuzzComputeStatus(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x03, 0x09})                   // ready, one running pod
	f.Add([]byte{0x23, 0x09, 0x07, 0x15})       // leased ready; disabled ready with a pending pod
	f.Add([]byte{0x0f, 0xff, 0x30, 0x02, 0x11}) // retiring, deleting, odd length
	f.Add([]byte("a fuzzed pool of several instances"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := instancesFromBytes(data)
		before := make([]*pool.Instance, len(in))
		for i, x := range in {
			before[i] = &pool.Instance{Exporter: x.Exporter.DeepCopy()}
			for _, p := range x.Pods {
				before[i].Pods = append(before[i].Pods, p.DeepCopy())
			}
		}
		s := pool.ComputeStatus(in, fixture.ProblemsOf(in))
		checkStatusInvariants(t, in, s)
		for i := range in {
			if !reflect.DeepEqual(before[i], in[i]) {
				t.Fatalf("ComputeStatus changed instance %s", in[i].Name())
			}
		}
		if len(in) == 0 {
			return
		}
		shuffled := append([]*pool.Instance(nil), in...)
		rand.New(rand.NewSource(int64(len(data)))).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if d := cmp.Diff(s, pool.ComputeStatus(shuffled, fixture.ProblemsOf(shuffled))); d != "" {
			t.Fatalf("the order of instances changed the status (-in order +shuffled):\n%s", d)
		}
		cut := int(data[0]) % (len(in) + 1)
		if d := cmp.Diff(s, addCounts(pool.ComputeStatus(in[:cut], fixture.ProblemsOf(in[:cut])), pool.ComputeStatus(in[cut:], fixture.ProblemsOf(in[cut:])))); d != "" {
			t.Fatalf("the counts of a pool split at %d do not add up (-whole +sum):\n%s", cut, d)
		}
	})
}
