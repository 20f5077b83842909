package main

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/e2e/core"
	"github.com/exporterset/exporterset/internal/testing/testproc"
)

// One lease cycle of upstream's sample pool through jumpsim's core, with its writes to the
// Exporter and the Lease recorded: the jumpsim column of docs/e2e.md's fidelity table
// (the e2e tier's TestSamplePoolOnRealNode records upstream's column the same way).
func TestFidelityJumpsimLeaseCycle(t *testing.T) {
	ns := samplesIn(t)
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	rec, err := core.Record(rctx, wc, ns)
	if err != nil {
		t.Fatal(err)
	}
	p, l := leaseFromWarmPool(t, ns, "fidelity")
	testproc.WaitFor(t, 30*time.Second, "lease assigned", func() (bool, string) {
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(l), l)
		return l.Status.ExporterRef != nil, fmt.Sprintf("%+v", l.Status)
	})
	leased := l.Status.ExporterRef.Name
	patched := l.DeepCopy()
	patched.Spec.Release = true
	if err := env.Client.Patch(ctx, patched, client.MergeFrom(l)); err != nil {
		t.Fatal(err)
	}
	testproc.WaitFor(t, 30*time.Second, "the released instance recycled", func() (bool, string) {
		var e jumpstarterv1alpha1.Exporter
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: leased}, &e)
		return err != nil || e.DeletionTimestamp != nil, "still there"
	})
	for _, k := range []string{"Exporter " + leased, "Lease " + l.Name} {
		t.Logf("FIDELITY jumpsim's core, %s:\n%s", k, rec.Of(k))
	}
	p.Stop(t, 25*time.Second)
}
