package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/exporterset/exporterset/internal/controllerapp"
	"github.com/exporterset/exporterset/internal/testing/testproc"
)

// A namespace that is deleted takes its provisioner's lock (the Lease ours holds there) with
// it, and no process can create that Lease again while the namespace terminates. The default
// install must not take that for a lost lock and stop: every other namespace's pools would
// stall for a restart and their locks' expiry (the real node showed a lease waiting minutes
// for a replaced Pod). Ours keeps serving the other namespaces, and, in the terminating
// namespace, nobody can act but itself.
func TestDefaultInstallSurvivesANamespaceDeletion(t *testing.T) {
	rendered, from := defaultInstallArgs(t)
	if !contains(rendered, "--leader-elect") {
		t.Fatalf("%s does not elect a leader by default: %v", from, rendered)
	}
	// Short locks, so that a renewal fails within seconds.
	args := append(localArgs(rendered, kubeconfig(t)),
		"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms")
	gone, stays := samplesIn(t), samplesIn(t)
	startSim(t, gone)
	startSim(t, stays)
	cmd := exec.Command(binary, args...)
	cmd.Env = []string{"POD_NAMESPACE=exporterset-system", "HOME=" + t.TempDir()}
	ours := testproc.StartCmd(t, cmd)
	defer ours.Stop(t, 25*time.Second)
	lock := func(ns string) client.ObjectKey {
		return client.ObjectKey{Namespace: ns, Name: controllerapp.ProvisionerElectionID(sampleProvisioner)}
	}
	for _, ns := range []string{gone, stays} {
		testproc.WaitFor(t, 60*time.Second, "ours to hold "+lock(ns).String()+" and the pool to be available", func() (bool, string) {
			st := poolStatus(t, ns)
			return strings.Contains(ours.Output(), "acquired the provisioner's lock") && st.AvailableReplicas >= 1, fmt.Sprintf("%+v", st)
		})
	}

	// The namespace controller's part (envtest runs none): the namespace terminates and its
	// Lease is deleted; NamespaceLifecycle admission refuses to create it again.
	if err := env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: gone}}); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: gone, Name: lock(gone).Name}}); err != nil {
		t.Fatal(err)
	}
	recreate := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: gone, Name: "probe"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("probe")}}
	if err := env.Client.Create(ctx, recreate); !apierrors.IsForbidden(err) {
		t.Fatalf("creating a Lease in a terminating namespace: %v, want Forbidden (the premise of this test)", err)
	}
	time.Sleep(8 * time.Second) // two renew deadlines
	if ours.Exited() {
		t.Fatalf("ours stopped after namespace %s was deleted:\n%s", gone, testproc.Tail(ours.Output(), 30))
	}
	if strings.Contains(ours.Output(), "lost the leader election lock") {
		t.Fatalf("ours took a deleted namespace's Lease for a lost lock:\n%s", testproc.Tail(ours.Output(), 30))
	}

	// The other namespace's pool is still served: a change of its spec is acted on.
	set := poolSet(t, stays)
	base := client.MergeFrom(set.DeepCopy())
	set.Spec.MinReplicas = 2
	if err := env.Client.Patch(ctx, set, base); err != nil {
		t.Fatal(err)
	}
	testproc.WaitFor(t, 60*time.Second, "the pool of "+stays+" to grow to 2", func() (bool, string) {
		st := poolStatus(t, stays)
		return st.Replicas == 2 && st.ObservedGeneration == set.Generation, fmt.Sprintf("%+v", st)
	})
	var held coordinationv1.Lease
	if err := env.Client.Get(ctx, lock(stays), &held); err != nil || held.Spec.HolderIdentity == nil || *held.Spec.HolderIdentity == "" {
		t.Fatalf("the Lease of %s: %v %+v", stays, err, held.Spec)
	}
}
