package exporterset_test

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
)

// staleClient is a deliberately stale reader: it answers Exporter lists (and, if set, gets of
// the ExporterSet) from a snapshot taken before a scale-up, as a lagging informer would.
// Writes go to the API server.
type staleClient struct {
	client.Client
	exporters *jumpstarterv1alpha1.ExporterList
	set       *vtv1alpha1.ExporterSet
}

func (s *staleClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if l, ok := list.(*jumpstarterv1alpha1.ExporterList); ok && s.exporters != nil {
		s.exporters.DeepCopyInto(l)
		return nil
	}
	return s.Client.List(ctx, list, opts...)
}

func (s *staleClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if set, ok := obj.(*vtv1alpha1.ExporterSet); ok && s.set != nil {
		s.set.DeepCopyInto(set)
		return nil
	}
	return s.Client.Get(ctx, key, obj, opts...)
}

func TestStaleCacheDoesNotOverCreate(t *testing.T) {
	for _, tc := range []struct {
		name string
		// expectations on, fresh set (its instance sequence advanced): only the in-memory
		// expectations stop a second create. Expectations off, stale set too: only the
		// deterministic names do.
		expectations, staleSet bool
	}{
		{"expectations", true, false},
		{"deterministic names", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, jumpsimWithoutAnything()...)
			w.class("fake")
			set := w.set("pool", 3, 10, 0)
			if err := w.c.Get(w.ctx, client.ObjectKeyFromObject(set), set); err != nil {
				t.Fatal(err)
			}
			var before jumpstarterv1alpha1.ExporterList // empty: the view before the scale-up
			stale := &staleClient{Client: w.c, exporters: &before}
			if tc.staleSet {
				stale.set = set.DeepCopy()
			}
			r := exporterset.NewReconciler(stale, w.c, w.fake.Registry(), exporterset.WithExpectations(tc.expectations))
			req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: w.ns, Name: "pool"}}

			// The first pass creates all three at once.
			if _, err := r.Reconcile(w.ctx, req); err != nil {
				t.Fatal(err)
			}
			if n := len(w.exporters("pool")); n != 3 {
				t.Fatalf("first reconcile created %d instances, want 3", n)
			}
			// K more passes on the stale view create nothing more.
			for k := 0; k < 5; k++ {
				_, _ = r.Reconcile(w.ctx, req) // a stale set's status write may conflict: that is fine
			}
			if n := len(w.exporters("pool")); n != 3 {
				t.Fatalf("after 5 stale reconciles there are %d instances, want 3", n)
			}
		})
	}
}

// A pass can create instances and then fail to write the status that advances the instance
// sequence (a conflict). The next pass computes those names again: they belong to
// instances it already counts, so it must go on to fresh names, not take AlreadyExists for
// the instances it meant to create.
func TestLostSequenceWriteStillCreates(t *testing.T) {
	w := newWorld(t, jumpsimWithoutAnything()...)
	w.class("fake")
	w.set("pool", 2, 10, 0)
	r := exporterset.NewReconciler(w.c, w.c, w.fake.Registry())
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: w.ns, Name: "pool"}}
	if _, err := r.Reconcile(w.ctx, req); err != nil {
		t.Fatal(err)
	}
	if n := len(w.exporters("pool")); n != 2 {
		t.Fatalf("first reconcile created %d instances, want 2", n)
	}
	set := w.getSet("pool")
	if set.Status.InstanceSequence != 2 {
		t.Fatalf("instanceSequence %d after two creates", set.Status.InstanceSequence)
	}
	set.Status.InstanceSequence = 0 // the status write of that pass was lost
	if err := w.c.Status().Update(w.ctx, set); err != nil {
		t.Fatal(err)
	}
	w.edit(set, func() { set.Spec.MinReplicas = 3 })

	if _, err := r.Reconcile(w.ctx, req); err != nil {
		t.Fatal(err)
	}
	if n := len(w.exporters("pool")); n != 3 {
		t.Fatalf("the pass after the lost write left %d instances, want 3", n)
	}
	if seq := w.getSet("pool").Status.InstanceSequence; seq != 3 {
		t.Errorf("instanceSequence %d, want 3 (two names skipped as taken, one used)", seq)
	}
}

// conflictOnDelete fails the first Delete of an Exporter with a conflict, as when the
// Jumpstarter controller writes a heartbeat between the re-read and the delete.
type conflictOnDelete struct {
	client.Client
	conflicted bool
}

func (c *conflictOnDelete) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	if _, ok := obj.(*jumpstarterv1alpha1.Exporter); ok && !c.conflicted {
		c.conflicted = true
		return apierrors.NewConflict(schema.GroupResource{Group: "jumpstarter.dev", Resource: "exporters"}, obj.GetName(), errors.New("the object has been modified"))
	}
	return c.Client.Delete(ctx, obj, opts...)
}

// A removal that loses a race to a write the watches ignore (heartbeats are filtered) must
// be tried again soon, not left to the next unrelated event or the resync.
func TestRemovalRetriedSoonAfterConflict(t *testing.T) {
	w := newWorld(t, jumpsimWithoutAnything()...)
	w.class("fake")
	set := w.set("pool", 2, 2, 0)
	now := time.Now()
	clk := clocktesting.NewFakePassiveClock(now)
	c := &conflictOnDelete{Client: w.c}
	r := exporterset.NewReconciler(c, w.c, w.fake.Registry(), exporterset.WithClock(clk))
	req := ctrl.Request{NamespacedName: types.NamespacedName{Namespace: w.ns, Name: "pool"}}
	if _, err := r.Reconcile(w.ctx, req); err != nil {
		t.Fatal(err)
	}
	w.edit(set, func() { set.Spec.MinReplicas, set.Spec.MaxReplicas = 1, ptr.To[int32](1) })
	if _, err := r.Reconcile(w.ctx, req); err != nil { // retires one: disabled, removal after the grace
		t.Fatal(err)
	}
	clk.SetTime(now.Add(time.Minute))
	res, err := r.Reconcile(w.ctx, req) // past the grace: the delete conflicts
	if err != nil {
		t.Fatal(err)
	}
	if !c.conflicted {
		t.Fatal("no delete was tried")
	}
	if n := len(w.exporters("pool")); n != 2 {
		t.Fatalf("%d instances after the conflicting delete, want 2", n)
	}
	if res.RequeueAfter <= 0 || res.RequeueAfter > 2*time.Second {
		t.Fatalf("after a conflicting delete the set is looked at again in %v, want within 2s", res.RequeueAfter)
	}
	if _, err := r.Reconcile(w.ctx, req); err != nil {
		t.Fatal(err)
	}
	if n := len(w.exporters("pool")); n != 1 {
		t.Fatalf("%d instances after the retry, want 1", n)
	}
}
