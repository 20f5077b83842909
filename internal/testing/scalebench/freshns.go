package scalebench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The fresh-namespace case (issue 41): the controller runs as the chart installs it, with
// --leader-elect, the binary's default lease timings and rate limits, every namespace
// watched, and is already running when a set of one instance is created in a namespace it
// has never held a set in. The per-namespace Lease campaign starts at that set, so the
// time to its first Exporter is what a user of the default install meets on every new
// namespace; the envtest workloads, run with --namespace and no election, never show it.

// FreshNamespaceRun is one set created in a namespace the running controller had no set in.
type FreshNamespaceRun struct {
	Namespace string `json:"namespace"`
	// FirstCreatedSeconds is from the set's create to its first Exporter seen on a watch.
	FirstCreatedSeconds float64 `json:"firstCreatedSeconds"`
	// FirstAvailableSeconds is from the set's create to its first instance available.
	FirstAvailableSeconds float64 `json:"firstAvailableSeconds"`
}

// freshNS is the namespace of the fresh-namespace case's run r.
func freshNS(r int) string { return fmt.Sprintf("fresh-ns-%d", r) }

// freshNamespaceSettle is how long the controller runs before the first set: the sets the
// earlier runs left in other namespaces are read and found in order by then.
const freshNamespaceSettle = 3 * time.Second

// runFreshNamespaces runs the fresh-namespace case n times, one namespace each, on one
// controller process.
func (b *Bench) runFreshNamespaces(ctx context.Context, n int) ([]FreshNamespaceRun, error) {
	for r := 1; r <= n; r++ {
		if err := b.fx.prepareOurs(ctx, b.cluster.Client, freshNS(r)); err != nil {
			return nil, err
		}
	}
	args := append(slices.Clip(b.cfg.OursArgs), "--leader-elect")
	ctl, err := startOurs(ctx, b.cluster, b.cfg.ControllerBin, b.cfg.WorkDir, "fresh-ns", nil, nil, args)
	if err != nil {
		return nil, err
	}
	defer ctl.stop()
	time.Sleep(freshNamespaceSettle)
	var out []FreshNamespaceRun
	for r := 1; r <= n; r++ {
		run, err := b.freshNamespaceRun(ctx, ctl, freshNS(r))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", freshNS(r), err)
		}
		b.logf("fresh namespace %s: first Exporter after %.2fs, first available after %.2fs", run.Namespace, run.FirstCreatedSeconds, run.FirstAvailableSeconds)
		out = append(out, run)
	}
	return out, nil
}

func (b *Bench) freshNamespaceRun(ctx context.Context, ctl *ours, ns string) (FreshNamespaceRun, error) {
	tctx, untrack := context.WithCancel(ctx)
	defer untrack()
	tr, err := b.trackInstances(tctx, ns, Ours)
	if err != nil {
		return FreshNamespaceRun{}, err
	}
	w := Workload{Name: "fresh-namespace", Sets: 1, PerSet: 1}
	start := time.Now()
	if err := b.cluster.Client.Create(ctx, b.fx.exporterSet(ns, setName(0), 1)); err != nil {
		return FreshNamespaceRun{}, err
	}
	if _, err := b.waitSets(ctx, ns, w, func(o client.Object) bool {
		return o.(*vtv1alpha1.ExporterSet).Status.AvailableReplicas >= 1
	}, ctl.exited); err != nil {
		return FreshNamespaceRun{}, err
	}
	created, lat := tr.firstCreated(), tr.latency(start)
	if created.IsZero() || lat == nil {
		return FreshNamespaceRun{}, fmt.Errorf("the set is available but no instance of it was seen on the watch")
	}
	return FreshNamespaceRun{Namespace: ns, FirstCreatedSeconds: created.Sub(start).Seconds(), FirstAvailableSeconds: lat.FirstSeconds}, nil
}

// writeFreshNamespaces prints the fresh-namespace runs.
func (r *Report) writeFreshNamespaces(w io.Writer) {
	if len(r.FreshNamespace) == 0 {
		return
	}
	fmt.Fprintln(w, "\nfresh namespace (--leader-elect, default timings, all namespaces watched; set create -> first Exporter, first available)")
	for _, run := range r.FreshNamespace {
		fmt.Fprintf(w, "  %-12s first Exporter %.2f s, first available %.2f s\n", run.Namespace, run.FirstCreatedSeconds, run.FirstAvailableSeconds)
	}
}
