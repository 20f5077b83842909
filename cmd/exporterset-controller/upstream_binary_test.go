package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/testenv"
	"github.com/exporterset/exporterset/internal/testing/testproc"
)

// upstreamBinary is upstream's exporter-set controller built at b1f2bb41, kept beside the
// repository for side-by-side runs only (../shared/tools/upstream/README.md).
func upstreamBinary(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(filepath.Dir(root), "shared", "tools", "upstream", "exporter-set-controller")
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("upstream's binary is not here: %v", err)
	}
	return bin
}

// Going back: ours serves the sample pool under the operator's Deployment with a lease held;
// upstream's controller, started beside it (the operator's rolling update), waits on the
// same Lease; ours stops and hands the lock over; upstream's then runs the pool ours built
// without a duplicate Pod and without touching the leased instance, and recycles it when the
// lease ends (our Pods carry its label).
func TestUpstreamTakesOverOurPool(t *testing.T) {
	up := upstreamBinary(t)
	ns := samplesIn(t)
	startSim(t, ns)
	kc := operatorKubeconfig(t, ns)
	args := append(upstreamOperator.args(sampleProvisioner)[:2:2], "--health-probe-bind-address=127.0.0.1:0", "--metrics-bind-address=0")
	ours := asOperator(t, ns, kc, args)
	testproc.WaitFor(t, 60*time.Second, "the warm buffer", func() (bool, string) {
		st := poolStatus(t, ns)
		return st.AvailableReplicas == 1, fmt.Sprintf("%+v", st)
	})
	l, leased, leasedPod := holdLease(t, ns, "the buffer")

	theirs := startUpstream(t, up, ns, kc)
	const acquired = "successfully acquired lease"
	time.Sleep(5 * time.Second)
	if strings.Contains(theirs.Output(), acquired) || strings.Contains(theirs.Output(), "reconciling ExporterSet") {
		t.Fatalf("upstream's controller acted while ours held the lock:\n%s", testproc.Tail(theirs.Output(), 20))
	}
	ours.Stop(t, 25*time.Second) // releases the lock once its manager has stopped
	testproc.WaitFor(t, 30*time.Second, "upstream's controller to take the lock", func() (bool, string) {
		return strings.Contains(theirs.Output(), acquired), ""
	})
	testproc.WaitFor(t, 30*time.Second, "upstream's controller reconciling our pool", func() (bool, string) {
		return strings.Contains(theirs.Output(), "reconciling ExporterSet"), ""
	})
	time.Sleep(5 * time.Second)
	owned := ownedBy(t, ns)
	if len(owned) != 2 {
		t.Fatalf("%d instances under upstream's controller, want the 2 ours built", len(owned))
	}
	for _, e := range owned {
		if n := podsOf(t, ns, e.UID); n != 1 {
			t.Errorf("instance %s has %d pods under upstream's controller", e.Name, n)
		}
	}
	leasedPodKept(t, &leasedPod)
	var e jumpstarterv1alpha1.Exporter
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: leased}, &e); err != nil || !e.IsEnabled() || e.DeletionTimestamp != nil {
		t.Fatalf("the leased instance was disabled or deleted: %v", err)
	}

	// The lease ends: the exporter exits, and upstream's controller recycles our instance.
	patched := l.DeepCopy()
	patched.Spec.Release = true
	if err := env.Client.Patch(ctx, patched, client.MergeFrom(l)); err != nil {
		t.Fatal(err)
	}
	testproc.WaitFor(t, 60*time.Second, "upstream's controller to recycle the leased instance", func() (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: leased}, &e)
		st := poolStatus(t, ns)
		gone := err != nil || e.DeletionTimestamp != nil
		return gone && st.AvailableReplicas >= 1, fmt.Sprintf("gone=%v %+v", gone, st)
	})
	theirs.Stop(t, 25*time.Second)
}

func ownedBy(t *testing.T, ns string) []jumpstarterv1alpha1.Exporter {
	t.Helper()
	set := poolSet(t, ns)
	var list jumpstarterv1alpha1.ExporterList
	if err := env.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []jumpstarterv1alpha1.Exporter
	for _, e := range list.Items {
		if ref := metav1.GetControllerOf(&e); ref != nil && ref.UID == set.UID && e.DeletionTimestamp == nil {
			out = append(out, e)
		}
	}
	return out
}

func podsOf(t *testing.T, ns string, uid types.UID) int {
	t.Helper()
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == uid && p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

// The swap itself: upstream's controller serves the sample pool with a lease held; ours,
// started beside it as the operator's rolling update starts it, waits on the same Lease;
// upstream's stops (it does not release the Lease: ours takes it once it expires) and ours
// takes the pool over: the leased instance untouched, upstream's idle one replaced by ours,
// no second pool.
func TestTakesOverFromUpstreamBinary(t *testing.T) {
	up := upstreamBinary(t)
	ns := samplesIn(t)
	startSim(t, ns)
	kc := operatorKubeconfig(t, ns)
	theirs := startUpstream(t, up, ns, kc)
	testproc.WaitFor(t, 60*time.Second, "upstream's warm buffer", func() (bool, string) {
		st := poolStatus(t, ns)
		return st.AvailableReplicas == 1, fmt.Sprintf("%+v", st)
	})
	_, leased, leasedPod := holdLease(t, ns, "upstream's buffer")
	before := ownedBy(t, ns)

	args := append(upstreamOperator.args(sampleProvisioner)[:2:2], "--health-probe-bind-address=127.0.0.1:0", "--metrics-bind-address=0")
	ours := asOperator(t, ns, kc, args)
	const acquired = "acquired the provisioner's lock"
	time.Sleep(5 * time.Second)
	if strings.Contains(ours.Output(), acquired) {
		t.Fatalf("ours took the lock while upstream's held it:\n%s", testproc.Tail(ours.Output(), 20))
	}
	if now := ownedBy(t, ns); len(now) != len(before) {
		t.Fatalf("the pool changed while upstream's held the lock: %d then %d instances", len(before), len(now))
	}
	theirs.Stop(t, 25*time.Second)
	testproc.WaitFor(t, 40*time.Second, "ours to take the lock once it expires", func() (bool, string) {
		return strings.Contains(ours.Output(), acquired), ""
	})
	takenOverKeepingLease(t, ns, leased, &leasedPod)
	for _, e := range ownedBy(t, ns) {
		if n := podsOf(t, ns, e.UID); n != 1 {
			t.Errorf("instance %s has %d pods", e.Name, n)
		}
	}
	if forbidden.MatchString(ours.Output()) {
		t.Fatalf("forbidden in our log:\n%s", testproc.Tail(ours.Output(), 40))
	}
	ours.Stop(t, 25*time.Second)
}

// startUpstream starts upstream's binary up as its operator would, with kubeconfig kc.
func startUpstream(t *testing.T, up, ns, kc string) *testproc.Proc {
	t.Helper()
	cmd := exec.Command(up, "--provisioner="+sampleProvisioner, "--leader-elect", "--health-probe-bind-address=127.0.0.1:0", "--metrics-bind-address=0")
	cmd.Env = []string{"NAMESPACE=" + ns, "KUBECONFIG=" + kc, "HOME=" + t.TempDir()}
	return testproc.StartCmd(t, cmd)
}

// holdLease takes a lease on the sample pool and waits until it is served and buffer (whose
// controller's it is, for the message) refilled; it returns the lease, the leased instance
// and its Pod.
func holdLease(t *testing.T, ns, buffer string) (*jumpstarterv1alpha1.Lease, string, corev1.Pod) {
	t.Helper()
	l := &jumpstarterv1alpha1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: ns},
		Spec: jumpstarterv1alpha1.LeaseSpec{ClientRef: corev1.LocalObjectReference{Name: "e2e"},
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"board": "x86-64-virtual"}},
			Duration: &metav1.Duration{Duration: time.Hour}}}
	if err := env.Client.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	testproc.WaitFor(t, 60*time.Second, "the lease served and "+buffer+" refilled", func() (bool, string) {
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(l), l)
		st := poolStatus(t, ns)
		return l.Status.ExporterRef != nil && st.LeasedReplicas == 1 && st.AvailableReplicas == 1, fmt.Sprintf("%+v", st)
	})
	leased := l.Status.ExporterRef.Name
	var pod corev1.Pod
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: leased}, &pod); err != nil {
		t.Fatal(err)
	}
	return l, leased, pod
}

// leasedPodKept fails the test when the leased instance's Pod was replaced or is deleting.
// takenOverKeepingLease waits until ours has replaced upstream's idle instance of the pool
// in ns, and checks that upstream's leased instance and its Pod were kept as they were.
func takenOverKeepingLease(t *testing.T, ns, leased string, leasedPod *corev1.Pod) {
	t.Helper()
	testproc.WaitFor(t, 60*time.Second, "upstream's idle instance replaced by ours, the leased one kept", func() (bool, string) {
		st := poolStatus(t, ns)
		var foreign []string
		for _, e := range ownedBy(t, ns) {
			if e.Labels["virtualtarget.jumpstarter.dev/exporterset"] == "" {
				foreign = append(foreign, e.Name)
			}
		}
		return len(foreign) == 1 && foreign[0] == leased && st.Replicas == 2 && st.AvailableReplicas == 1 && st.LeasedReplicas == 1,
			fmt.Sprintf("upstream's %v; %+v", foreign, st)
	})
	leasedPodKept(t, leasedPod)
	var e jumpstarterv1alpha1.Exporter
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: leased}, &e); err != nil || !e.IsEnabled() || e.DeletionTimestamp != nil {
		t.Fatalf("the leased instance was disabled or deleted: %v", err)
	}
}

func leasedPodKept(t *testing.T, leasedPod *corev1.Pod) {
	t.Helper()
	var pod corev1.Pod
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(leasedPod), &pod); err != nil || pod.UID != leasedPod.UID || pod.DeletionTimestamp != nil {
		t.Fatalf("the leased instance's pod was replaced or deleted: %v", err)
	}
}
