package soak

import (
	"context"
	"fmt"
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
	"github.com/exporterset/exporterset/internal/testing/fakeprov"
	"github.com/exporterset/exporterset/internal/testing/testenv"
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
	p := &pool{set: "race", class: "race", provisioner: fakeprov.Name, recycle: vtv1alpha1.RecycleExitAndReplace, min: 2, max: 3}
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

	// The floor makes two instances (no credentials are issued: they stay Pod-less, which is
	// all this needs). Lowered to 0, one of them is a surplus and the other the standby that
	// Leases wait on (leasewait.go): a Lease is assigned to each, so whichever is retired
	// races one.
	var names []string
	eventually(t, 20*time.Second, "the set's instances", func() bool {
		var list jumpstarterv1alpha1.ExporterList
		if err := c.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{expool.LabelSet: p.set}); err != nil || len(list.Items) != 2 {
			return false
		}
		names = []string{list.Items[0].Name, list.Items[1].Name}
		return true
	})

	// The Jumpstarter controller's first write: the Lease names the Exporter.
	var leases []*jumpstarterv1alpha1.Lease
	for i, name := range names {
		l := &jumpstarterv1alpha1.Lease{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("assigned-%d", i), Namespace: ns},
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
		leases = append(leases, l)
	}

	// Now the set has a surplus: it retires one instance at once (cooldown 0)...
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
	// ... but must keep both while the Leases are assigned to them.
	deadline := time.Now().Add(6 * time.Second)
	for time.Now().Before(deadline) {
		for i, name := range names {
			var e jumpstarterv1alpha1.Exporter
			if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &e); err != nil {
				t.Fatalf("exporter %s is gone (%v) while lease %s is assigned to it", name, err, leases[i].Name)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Once the Leases end, the retired instance goes and the standby stays.
	for _, l := range leases {
		l.Status.Ended = true
		l.Status.EndTime = ptr.To(metav1.Now())
		if err := c.Status().Update(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 20*time.Second, "one instance deleted after the leases ended, the standby kept", func() bool {
		gone := 0
		for _, name := range names {
			var e jumpstarterv1alpha1.Exporter
			err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &e)
			if client.IgnoreNotFound(err) != nil {
				return false
			}
			if err != nil || e.DeletionTimestamp != nil {
				gone++
			}
		}
		return gone == 1
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
