package exporterset_test

import (
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// watchLeasedNeverRetired polls the set's Exporters until stopped and fails the test if the
// set disabled or deleted one while it held a lease: seen leased and still enabled, then seen
// disabled by the set (retiring) with the same lease, or gone while the lease had not ended.
// A lease the scheduler hands to an exporter the set had already disabled (its cache was
// behind) is the scheduler's race, not the set's: that exporter is never seen leased while
// enabled, and the set only waits for that lease to end.
func watchLeasedNeverRetired(t *testing.T, w *world, set string) (stop func()) {
	t.Helper()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		leasedBy := map[string]string{}      // exporter -> lease, as last seen
		leasedEnabled := map[string]string{} // exporter -> lease it was seen holding while enabled
		for {
			select {
			case <-done:
				return
			default:
			}
			var list jumpstarterv1alpha1.ExporterList
			if err := w.c.List(w.ctx, &list, client.InNamespace(w.ns), client.MatchingLabels{pool.LabelSet: set}); err != nil {
				continue
			}
			now := map[string]jumpstarterv1alpha1.Exporter{}
			for _, e := range list.Items {
				now[e.Name] = e
			}
			for name, lease := range leasedBy {
				e, ok := now[name]
				if !ok || e.DeletionTimestamp != nil {
					if leaseActive(w, lease) {
						t.Errorf("exporter %s was deleted while lease %s held it", name, lease)
					}
					continue
				}
				if e.Status.LeaseRef != nil && e.Status.LeaseRef.Name == leasedEnabled[name] && e.Annotations[pool.AnnotationRetiring] != "" && !e.IsEnabled() {
					t.Errorf("exporter %s holding lease %s was disabled by the set", name, lease)
				}
			}
			leasedBy = map[string]string{}
			for name, e := range now {
				if e.Status.LeaseRef == nil {
					delete(leasedEnabled, name)
					continue
				}
				leasedBy[name] = e.Status.LeaseRef.Name
				if e.IsEnabled() {
					leasedEnabled[name] = e.Status.LeaseRef.Name
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	return func() { close(done); wg.Wait() }
}

func leaseActive(w *world, name string) bool {
	var l jumpstarterv1alpha1.Lease
	if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &l); err != nil {
		return false
	}
	return !l.Status.Ended
}
