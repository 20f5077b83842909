package exporterset_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
)

// The reconciler's memory lives no longer than what it is about: an instance deleted behind
// its back (here: every instance, four times over) leaves nothing in memory, not its
// rendered config and so not its token; the memory of a pool that churns stays the size of
// the pool; a deleted set leaves nothing at all, in any store of its record (expectations,
// failures, pruned status, start-ups, the metrics' bookkeeping) nor in its metric series.
func TestMemoryEndsWithItsInstanceAndSet(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	reg := prometheus.NewRegistry()
	w.controller(env.Config, exporterset.WithMetrics(reg))
	w.set("pool", 0, 6, 3)
	key := w.ns + "/pool"
	w.waitHealthy("pool", 3, 30*time.Second)

	var tokens [][]byte
	var sizes []int
	for round := 0; round < 4; round++ {
		live := w.exporters("pool")
		// Control: each live instance's config (with its token) is remembered, so the checks
		// below can fail.
		w.eventually(10*time.Second, "configs remembered", func() string {
			held := exporterset.RememberedInstances(w.rec, key)
			for _, e := range live {
				if !held[e.UID] {
					return fmt.Sprintf("instance %s not remembered", e.Name)
				}
			}
			return ""
		})
		for _, e := range live {
			tokens = append(tokens, w.token(e))
			if err := w.c.Delete(w.ctx, &e); client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
		}
		gone := uidsOf(live)
		w.waitStatus("pool", 30*time.Second, "3 new instances available", func(s vtv1alpha1.ExporterSetStatus) bool {
			return s.AvailableReplicas >= 3 && noneOf(w.exporters("pool"), gone)
		})
		w.eventually(10*time.Second, "nothing of the deleted instances remembered", func() string {
			for uid := range exporterset.RememberedInstances(w.rec, key) {
				if gone[uid] {
					return fmt.Sprintf("deleted instance %s still remembered", uid)
				}
			}
			for _, y := range exporterset.RememberedConfigs(w.rec) {
				for _, tok := range tokens {
					if bytes.Contains(y, tok) {
						return "a deleted instance's token is still in memory"
					}
				}
			}
			return ""
		})
		sizes = append(sizes, exporterset.MemoryEntries(w.rec))
	}
	// Thirteen per-set memos and six per-instance ones (drivers, config, started Pod, poke,
	// result, failure record) for at most the 3 live instances: had the 12 deleted instances
	// been kept, it would hold 72 entries more.
	for i, n := range sizes {
		if n > 13+6*3 {
			t.Errorf("round %d: %d entries remembered for a pool of 3 (sizes by round %v)", i, n, sizes)
		}
	}
	t.Logf("entries remembered after each round of deleting the pool: %v", sizes)

	// Control: the set's record holds what its passes keep, so the checks below can fail.
	w.eventually(10*time.Second, "the set's record kept", func() string {
		held := exporterset.StoresRemembering(w.rec, key)
		for _, s := range []string{"failures", "instFailures", "startup", "metrics"} {
			if !held[s] {
				return fmt.Sprintf("store %s holds nothing of the set (holding %v)", s, held)
			}
		}
		return ""
	})
	if n := seriesOf(t, reg, w.ns, "pool"); n == 0 {
		t.Fatal("no metric series of the set before its deletion")
	}

	if err := w.c.Delete(w.ctx, w.getSet("pool")); err != nil {
		t.Fatal(err)
	}
	w.eventually(10*time.Second, "nothing of the deleted set remembered", func() string {
		if left := exporterset.StoresRemembering(w.rec, key); len(left) != 0 || exporterset.RemembersSet(w.rec, key) {
			return fmt.Sprintf("the set is still remembered by %v", left)
		}
		if n := seriesOf(t, reg, w.ns, "pool"); n != 0 {
			return fmt.Sprintf("%d metric series of the set left", n)
		}
		return ""
	})
}

// seriesOf counts the series of reg labelled with the set ns/name.
func seriesOf(t *testing.T, reg *prometheus.Registry, ns, name string) (n int) {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == ns && labels["exporterset"] == name {
				n++
			}
		}
	}
	return n
}

// token reads the exporter's Jumpstarter token from its credential Secret.
func (w *world) token(e jumpstarterv1alpha1.Exporter) []byte {
	w.t.Helper()
	// e may be a snapshot from before its credential was issued (a busy machine): read it
	// again until it names one.
	w.eventually(10*time.Second, "exporter "+e.Name+" has a credential", func() string {
		if err := w.c.Get(w.ctx, types.NamespacedName{Namespace: e.Namespace, Name: e.Name}, &e); err != nil {
			return err.Error()
		}
		if e.Status.Credential == nil {
			return "no status.credential yet"
		}
		return ""
	})
	var s corev1.Secret
	if err := w.c.Get(w.ctx, types.NamespacedName{Namespace: e.Namespace, Name: e.Status.Credential.Name}, &s); err != nil {
		w.t.Fatal(err)
	}
	if len(s.Data[exporterset.TokenKey]) == 0 {
		w.t.Fatalf("exporter %s has no token", e.Name)
	}
	return s.Data[exporterset.TokenKey]
}

func uidsOf(es []jumpstarterv1alpha1.Exporter) map[types.UID]bool {
	out := map[types.UID]bool{}
	for _, e := range es {
		out[e.UID] = true
	}
	return out
}

func noneOf(es []jumpstarterv1alpha1.Exporter, uids map[types.UID]bool) bool {
	for _, e := range es {
		if uids[e.UID] {
			return false
		}
	}
	return true
}
