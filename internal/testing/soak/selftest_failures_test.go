package soak

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/fakeprov"
)

// The failure invariants' self-tests: synthetic statuses and event sequences that break the
// Available rule or the churn bound, and neighbours that do not.

func availableStatus(reason vtv1alpha1.ConditionReason, gen int64, st vtv1alpha1.ExporterSetStatus) vtv1alpha1.ExporterSetStatus {
	st.ObservedGeneration = gen
	st.Conditions = []metav1.Condition{{Type: vtv1alpha1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: string(reason),
		ObservedGeneration: gen, LastTransitionTime: metav1.Now(), Message: "self-test"}}
	return st
}

func TestJudgeAvailableStatus(t *testing.T) {
	p := &pool{set: "s", class: "s", provisioner: fakeprov.Name, min: 1, max: 4, minAvail: 2}
	met, wffc := vtv1alpha1.ReasonWarmBufferMet, vtv1alpha1.ReasonWaitForFirstConsumer
	for _, tc := range []struct {
		name   string
		reason vtv1alpha1.ConditionReason
		gen    int64 // the status's generation; the set's is 1
		st     vtv1alpha1.ExporterSetStatus
		broken bool
	}{
		{"buffer and floor hold", met, 1, vtv1alpha1.ExporterSetStatus{Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 2}, false},
		{"buffer short", met, 1, vtv1alpha1.ExporterSetStatus{Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 1}, true},
		{"floor not ready", met, 1, vtv1alpha1.ExporterSetStatus{Replicas: 3, ReadyReplicas: 0, AvailableReplicas: 2}, true},
		{"empty pool failing", met, 1, vtv1alpha1.ExporterSetStatus{Replicas: 3, ReadyReplicas: 1, FailingReplicas: 3}, true},
		{"an older generation is not judged", met, 0, vtv1alpha1.ExporterSetStatus{Replicas: 3}, false},
		{"WaitForFirstConsumer with enough instances", wffc, 1, vtv1alpha1.ExporterSetStatus{Replicas: 2}, false},
		{"WaitForFirstConsumer short", wffc, 1, vtv1alpha1.ExporterSetStatus{Replicas: 1}, true},
		{"WaitForFirstConsumer short of unleased instances", wffc, 1, vtv1alpha1.ExporterSetStatus{Replicas: 2, LeasedReplicas: 2}, true},
		{"WaitForFirstConsumer failing", wffc, 1, vtv1alpha1.ExporterSetStatus{Replicas: 2, FailingReplicas: 1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := newSet("ns", p)
			set.Generation = 1
			set.Status = availableStatus(tc.reason, tc.gen, tc.st)
			got := judgeAvailableStatus(set)
			if (got != "") != tc.broken {
				t.Fatalf("judgeAvailableStatus = %q, want broken=%v", got, tc.broken)
			}
			t.Log(got)
		})
	}
}

func TestChurnBound(t *testing.T) {
	o := DefaultCeilingOptions()
	// 2s doubling to 20s: attempts at 0, 2, 6, 14, 30, 50s of a minute.
	for l, want := range map[time.Duration]int64{0: 1, 2 * time.Second: 2, 13 * time.Second: 3, 14 * time.Second: 4, time.Minute: 6} {
		if got := attempts(l, o.BackoffBase, o.BackoffCap); got != want {
			t.Errorf("attempts(%s) = %d, want %d", l, got, want)
		}
	}
	now := time.Now()
	from := now.Add(-time.Minute)
	plain, _ := churnBound(from, now, nil, 2, 0, o)
	withReset, _ := churnBound(from, now, []time.Time{now.Add(-30 * time.Second)}, 2, 1, o)
	if plain != 6*2+2 || withReset <= plain {
		t.Errorf("bound %d without resets (want 14), %d with one reset and one disruption (want more)", plain, withReset)
	}
}

// TestCheckerDetectsFailureViolations breaks the Available rule and the churn bound against
// the real API server, with no controller running.
func TestCheckerDetectsFailureViolations(t *testing.T) {
	b := newBench(t)

	// A status whose own counters contradict Available=True.
	lying := b.set("lying", 3)
	b.writeStatus(lying.Name, func(s *vtv1alpha1.ExporterSet) {
		s.Spec.MinAvailableReplicas = 1
		s.Status = availableStatus(vtv1alpha1.ReasonWarmBufferMet, s.Generation, vtv1alpha1.ExporterSetStatus{Replicas: 1, ReadyReplicas: 1, FailingReplicas: 1})
	})
	b.expect(InvAvailableStatus, "lying")

	// A consistent status that the objects contradict (it claims an available instance the
	// set does not have) for longer than the grace.
	stale := b.set("stale", 3)
	b.writeStatus(stale.Name, func(s *vtv1alpha1.ExporterSet) {
		s.Spec.MinAvailableReplicas = 1
		s.Status = availableStatus(vtv1alpha1.ReasonWarmBufferMet, s.Generation, vtv1alpha1.ExporterSetStatus{Replicas: 1, ReadyReplicas: 1, AvailableReplicas: 1})
	})
	b.expect(InvAvailableLive, "stale")
	b.expectNone(InvAvailableStatus, "stale")

	// A failing set creating instances much faster than its backoff allows; the same burst
	// of a set that is not failing is not churn.
	churning := b.set("churning", 1)
	b.checker.SetFailing("churning", "crash registry.example/soak-runtime-churning:1", true)
	calm := b.set("calm", 1)
	for i := 0; i < 6; i++ {
		b.exporter(fmt.Sprintf("churning-%d", i), churning, "")
		b.exporter(fmt.Sprintf("calm-%d", i), calm, "")
	}
	b.expect(InvChurn, "churning")
	b.expectNone(InvChurn, "calm")
}

// writeStatus updates a set's spec and status as mutate says (spec first, then status).
func (b *bench) writeStatus(name string, mutate func(*vtv1alpha1.ExporterSet)) {
	b.t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var s vtv1alpha1.ExporterSet
		if err := b.c.Get(b.ctx, client.ObjectKey{Namespace: b.ns, Name: name}, &s); err != nil {
			return err
		}
		mutate(&s)
		if err := b.c.Update(b.ctx, &s); err != nil {
			return err
		}
		mutate(&s) // again: the update bumped the generation if the spec changed
		return b.c.Status().Update(b.ctx, &s)
	})
	if err != nil {
		b.t.Fatal(err)
	}
}
