package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/jumpsim"
	"github.com/exporterset/exporterset/internal/testing/testenv"
	"github.com/exporterset/exporterset/internal/testing/testproc"
)

// Where upstream's operator installed Jumpstarter, the ExporterSet CRD is upstream's: its
// status schema lacks surplusSince, instanceSequence, observedGeneration and failingReplicas,
// and the API server prunes them from our writes. The pool still scales down after its
// cooldown (the clock is kept in memory then), on its own API server with upstream's CRDs.
func TestScalesDownUnderUpstreamCRD(t *testing.T) {
	if _, err := testenv.UpstreamCRDDir(); err != nil {
		t.Skipf("upstream's CRDs are not here: %v", err)
	}
	up, err := testenv.Start(testenv.WithUpstreamExporterSetCRDs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = up.Stop() })
	ns, err := up.CreateNamespace(ctx, "upcrd")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.ApplySamples(ctx, up.Client, "", ns); err != nil {
		t.Fatal(err)
	}
	sim, err := jumpsim.New(up.Config, jumpsim.WithNamespaces(ns))
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Stop() })
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := up.WriteKubeconfig(kc); err != nil {
		t.Fatal(err)
	}
	p := start(t, "run", "--kubeconfig", kc, "--namespace", ns, "--provisioner", sampleProvisioner,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0")

	key := client.ObjectKey{Namespace: ns, Name: "x86-64-pool"}
	status := func() (vtv1alpha1.ExporterSetStatus, int64) {
		var s vtv1alpha1.ExporterSet
		if err := up.Client.Get(ctx, key, &s); err != nil {
			t.Fatal(err)
		}
		return s.Status, s.Generation
	}
	patch := func(p string) {
		var s vtv1alpha1.ExporterSet
		s.Name, s.Namespace = key.Name, key.Namespace
		if err := up.Client.Patch(ctx, &s, client.RawPatch("application/merge-patch+json", []byte(p))); err != nil {
			t.Fatal(err)
		}
	}
	testproc.WaitFor(t, 60*time.Second, "the warm buffer, written under upstream's schema", func() (bool, string) {
		st, _ := status()
		// Our writes always carry observedGeneration: its absence shows the pruning.
		return st.AvailableReplicas == 1 && st.ObservedGeneration == 0 && len(st.Conditions) > 0, fmt.Sprintf("%+v", st)
	})
	// Said once at start, in the log and as an event on the first set, naming what is kept in memory.
	const notice = "the installed ExporterSet CRD is upstream Jumpstarter's"
	if n := strings.Count(p.Output(), notice); n != 1 {
		t.Errorf("the log says %d times that the CRD is upstream's, want once:\n%s", n, testproc.Tail(p.Output(), 20))
	}
	testproc.WaitFor(t, 20*time.Second, "an UpstreamCRD event on the set", func() (bool, string) {
		var evs corev1.EventList
		if err := up.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		n := 0
		for _, e := range evs.Items {
			if e.Reason == "UpstreamCRD" && e.InvolvedObject.Name == key.Name && strings.Contains(e.Message, "cooldown clock is kept in memory") && e.Type == corev1.EventTypeWarning {
				n += int(max(e.Count, 1))
			}
		}
		return n == 1, fmt.Sprintf("%d UpstreamCRD events", n)
	})
	patch(`{"spec":{"scaleDownCooldown":"2s","minAvailableReplicas":2}}`)
	testproc.WaitFor(t, 60*time.Second, "two available", func() (bool, string) {
		st, _ := status()
		return st.AvailableReplicas == 2, fmt.Sprintf("%+v", st)
	})
	lowered := time.Now()
	patch(`{"spec":{"minAvailableReplicas":1}}`)
	testproc.WaitFor(t, 30*time.Second, "scaled down to one after the cooldown", func() (bool, string) {
		st, _ := status()
		return st.Replicas == 1 && st.AvailableReplicas == 1, fmt.Sprintf("%+v", st)
	})
	if took := time.Since(lowered); took < 2*time.Second {
		t.Fatalf("scaled down after %s, before the 2s cooldown", took)
	}
	p.Stop(t, 25*time.Second)
}
