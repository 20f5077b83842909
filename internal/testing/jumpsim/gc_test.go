package jumpsim

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Deleting an Exporter cascades to what it controls: Pod, config and token Secrets, Lease.
func TestGCDeletesOrphansOfExporter(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	ex := startExporter(t, sim, ns, "doomed", board, false)
	if _, err := sim.TakeLease(ctx, ns, "held", board, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitLeaseAssigned(ctx, ns, "held"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, func() error {
		if metav1.GetControllerOf(getObj(t, leaseObj(ns, "held"))) == nil {
			return fmt.Errorf("lease not owned yet")
		}
		return nil
	})
	if err := env.Client.Delete(ctx, ex); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{
		podObj(ns, "doomed"),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "doomed-config"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "doomed-token"}},
		leaseObj(ns, "held"),
	} {
		if err := sim.WaitGone(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	waitCount(t, sim, ActionGCDeleted, 4)
}

// An owner recreated under the same name is a different owner: dependents of the old one go.
func TestGCTreatsReplacedOwnerAsGone(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
	if err := env.Client.Create(ctx, owner); err != nil {
		t.Fatal(err)
	}
	ghost := *owner
	ghost.UID = "00000000-0000-0000-0000-000000000000" // a previous incarnation
	dep := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dep", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: ghost.UID, Controller: ptr.To(true),
	}}}}
	live := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "live", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID, Controller: ptr.To(true),
	}}}}
	for _, o := range []client.Object{dep, live} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	if err := sim.WaitGone(ctx, dep); err != nil {
		t.Fatal(err)
	}
	consistently(t, 300*time.Millisecond, func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(live), &corev1.Secret{})
	})
}

// With two owners, losing one only drops its reference.
func TestGCDropsDanglingRefWhenAnotherOwnerRemains(t *testing.T) {
	t.Parallel()
	_, ns := startSim(t)
	ctx := testCtx(t)
	a := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "a"}}
	b := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "b"}}
	for _, o := range []client.Object{a, b} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	dep := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared", OwnerReferences: []metav1.OwnerReference{
		{APIVersion: "v1", Kind: "ConfigMap", Name: "a", UID: a.UID},
		{APIVersion: "v1", Kind: "ConfigMap", Name: "b", UID: b.UID},
	}}}
	if err := env.Client.Create(ctx, dep); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, a); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, func() error {
		got := getObj(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared"}})
		if len(got.OwnerReferences) != 1 || got.OwnerReferences[0].UID != b.UID {
			return fmt.Errorf("owner refs %+v", got.OwnerReferences)
		}
		return nil
	})
}

// Foreground deletion (the apiserver adds the foregroundDeletion finalizer and waits for the
// garbage collector) completes; so does orphaning.
func TestGCForegroundAndOrphanDeletion(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	ex := startExporter(t, sim, ns, "fg", board, false)
	if err := env.Client.Delete(ctx, ex, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	if err := sim.WaitGone(ctx, ex); err != nil {
		t.Fatal(err)
	}
	for _, obj := range []client.Object{podObj(ns, "fg"), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "fg-config"}}} {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); !apierrors.IsNotFound(err) {
			t.Fatalf("%s/%s outlived its foreground-deleted owner: %v", typeName(obj), obj.GetName(), err)
		}
	}

	keep := startExporter(t, sim, ns, "orphaner", board, false)
	if err := env.Client.Delete(ctx, keep, client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil {
		t.Fatal(err)
	}
	if err := sim.WaitGone(ctx, keep); err != nil {
		t.Fatal(err)
	}
	consistently(t, 300*time.Millisecond, func() error {
		pod := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(podObj(ns, "orphaner")), pod); err != nil {
			return err
		}
		if len(pod.OwnerReferences) != 0 {
			return fmt.Errorf("orphaned pod still has owner refs %+v", pod.OwnerReferences)
		}
		return nil
	})
}

func TestWithoutGarbageCollector(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t, WithoutGarbageCollector())
	ctx := testCtx(t)
	ex := startExporter(t, sim, ns, "e", nil, false)
	if err := env.Client.Delete(ctx, ex); err != nil {
		t.Fatal(err)
	}
	if err := sim.WaitGone(ctx, ex); err != nil {
		t.Fatal(err)
	}
	consistently(t, 300*time.Millisecond, func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(podObj(ns, "e")), &corev1.Pod{})
	})
}
