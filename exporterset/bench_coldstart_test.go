package exporterset_test

import (
	"fmt"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/jumpsim"
)

// Cold start from rest (issue 38): an on-demand set (minAvailableReplicas 0) rests with one
// Exporter and no Pod; each op is one Lease, created → assigned by jumpsim's core, timed
// from a watch of the Lease. jumpsim keeps each Pod Pending for podStart and registers its
// exporter registration after it runs: together the target's boot time (boot-ms), against
// which the figure is read (at most boot + 1 s). Releasing the lease and waiting for rest
// are not timed.
//
//	KUBEBUILDER_ASSETS=... go test ./exporterset/ -run '^$' -bench ColdStartFromRest -benchtime 5x
func BenchmarkColdStartFromRest(b *testing.B) {
	const podStart, registration = 500 * time.Millisecond, 500 * time.Millisecond
	w := newWorld(b, jumpsim.WithPodStartDelay(podStart), jumpsim.WithRegistrationDelay(registration))
	w.class("fake")
	w.controller(env.Config)
	w.set("od", 0, 3, 0)
	w.waitAtRest("od")
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		wi, err := wc.Watch(w.ctx, &jumpstarterv1alpha1.LeaseList{}, client.InNamespace(w.ns))
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		l := w.lease(fmt.Sprintf("cold-%d", i), "od")
		took := waitAssignedOn(b, wi, l.Name, start)
		b.StopTimer()
		wi.Stop()
		total += took
		w.release(l)
		w.waitAtRest("od")
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/lease")
	b.ReportMetric(float64((podStart + registration).Milliseconds()), "boot-ms")
}

// waitAssignedOn reads wi until the Lease named name holds an exporter and returns how long
// after start that was seen; a refusal (Unsatisfiable) fails.
func waitAssignedOn(b *testing.B, wi watch.Interface, name string, start time.Time) time.Duration {
	b.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-wi.ResultChan():
			if !ok {
				b.Fatalf("watch of lease %s closed", name)
			}
			l, isLease := ev.Object.(*jumpstarterv1alpha1.Lease)
			if !isLease || l.Name != name {
				continue
			}
			if c := apimeta.FindStatusCondition(l.Status.Conditions, jumpstarterv1alpha1.LeaseConditionUnsatisfiable); c != nil && c.Status == "True" {
				b.Fatalf("lease %s refused: Unsatisfiable %s: %s", name, c.Reason, c.Message)
			}
			if l.Status.ExporterRef != nil {
				return time.Since(start)
			}
		case <-timeout:
			b.Fatalf("lease %s not assigned within 30s", name)
		}
	}
}
