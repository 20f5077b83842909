package soak

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	expool "github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/internal/fakeprov"
	"github.com/exporterset/exporterset/internal/testenv"
)

// TestRetiredInstanceKeptWhileALeaseIsAssignedToIt replays, step by step, the race the soak
// found (seed 1796212725260966333): the Jumpstarter controller assigns a Lease to an idle
// Exporter (Lease status.exporterRef) and writes the Exporter's status.leaseRef only
// afterwards; the set retired the Exporter in between, saw no leaseRef and deleted it, so
// the client's lease lost its exporter. Here the Jumpstarter controller is not simulated:
// the test writes the Lease's assignment itself and never the leaseRef, holding the window
// open. The set must not delete the Exporter while the Lease is assigned to it, and must
// delete it once the Lease has ended.
func TestRetiredInstanceKeptWhileALeaseIsAssignedToIt(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns, err := env.CreateNamespace(ctx, "soak-race")
	if err != nil {
		t.Fatal(err)
	}
	c := env.Client
	p := &pool{set: "race", class: "race", provisioner: fakeprov.Name, recycle: vtv1alpha1.RecycleExitAndReplace, min: 1, max: 2}
	for _, obj := range []client.Object{newClass(ns, p), newSet(ns, p)} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	ctrl := newController(env.Config, testenv.NewScheme(), ns, fakeprov.New().Registry(), NewFaults(0))
	if err := ctrl.start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ctrl.stop() }()

	// The floor makes one instance (no credentials are issued: it stays Pod-less, which is
	// all this needs).
	var name string
	eventually(t, 20*time.Second, "the set's instance", func() bool {
		var list jumpstarterv1alpha1.ExporterList
		if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{expool.LabelSet: p.set}); err != nil || len(list.Items) != 1 {
			return false
		}
		name = list.Items[0].Name
		return true
	})

	// The Jumpstarter controller's first write: the Lease names the Exporter.
	l := &jumpstarterv1alpha1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "assigned", Namespace: ns},
		Spec: jumpstarterv1alpha1.LeaseSpec{ClientRef: corev1.LocalObjectReference{Name: "client"},
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"board": p.set}}}}
	if err := c.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	l.Status.ExporterRef = &corev1.LocalObjectReference{Name: name}
	l.Status.BeginTime = ptr.To(metav1.Now())
	if err := c.Status().Update(ctx, l); err != nil {
		t.Fatal(err)
	}

	// Now the set has a surplus: it retires the instance at once (cooldown 0)...
	// The controller writes the set's status meanwhile: retry on the conflicts that causes.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var set vtv1alpha1.ExporterSet
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: p.set}, &set); err != nil {
			return err
		}
		set.Spec.MinReplicas = 0
		return c.Update(ctx, &set)
	}); err != nil {
		t.Fatal(err)
	}
	// ... but must keep it while the Lease is assigned to it.
	deadline := time.Now().Add(6 * time.Second)
	for time.Now().Before(deadline) {
		var e jumpstarterv1alpha1.Exporter
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &e); err != nil {
			t.Fatalf("exporter %s is gone (%v) while lease %s is assigned to it", name, err, l.Name)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Once the Lease ends, the retired instance goes.
	l.Status.Ended = true
	l.Status.EndTime = ptr.To(metav1.Now())
	if err := c.Status().Update(ctx, l); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the retired instance deleted after the lease ended", func() bool {
		var e jumpstarterv1alpha1.Exporter
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &e)
		return client.IgnoreNotFound(err) == nil && (err != nil || e.DeletionTimestamp != nil)
	})
}

func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
