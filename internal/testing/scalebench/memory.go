package scalebench

import (
	"context"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// MemoryResult compares the controller's RSS after the same scale-up with and without
// unrelated Pods, Secrets and Exporters in the cluster, the controller watching all
// namespaces, and with the ReplicaSet controller's after the same scale-up with the same
// unrelated objects in the cluster.
type MemoryResult struct {
	// Junk is how many Pods and how many Secrets were asked for (--junk), JunkExporters how
	// many Exporters (--junk-exporters); Created is what was created, by kind.
	Junk          int        `json:"junk"`
	JunkExporters int        `json:"junkExporters"`
	Created       JunkCounts `json:"created"`
	JunkNamespace string     `json:"junkNamespace"`
	JunkSeconds   float64    `json:"junkCreateSeconds"`
	Without       *Result    `json:"without"`
	With          *Result    `json:"with"`
	// RSSRatio is With.RSSBytes / Without.RSSBytes.
	RSSRatio float64 `json:"rssRatio"`
	// ReplicaSet is the ReplicaSet controller's run of the same scale-up with the unrelated
	// objects present (nil with --ours-only); RSSRatioToReplicaSet is With.RSSBytes /
	// ReplicaSet.RSSBytes.
	ReplicaSet           *Result `json:"replicaSet,omitempty"`
	RSSRatioToReplicaSet float64 `json:"rssRatioToReplicaSet,omitempty"`
	// Baseline holds the same figures of --baseline-bin, when given.
	Baseline *MemoryRuns `json:"baseline,omitempty"`
}

// MemoryRuns are one build's two runs of the memory check and their ratios.
type MemoryRuns struct {
	Without              *Result `json:"without"`
	With                 *Result `json:"with"`
	RSSRatio             float64 `json:"rssRatio"`
	RSSRatioToReplicaSet float64 `json:"rssRatioToReplicaSet,omitempty"`
}

// Namespaces of the memory check.
const (
	nsMemWithout     = "mem-without"
	nsMemWith        = "mem-with"
	nsMemBaseWithout = "mem-base-without"
	nsMemBaseWith    = "mem-base-with"
	nsMemRS          = "mem-rs"
)

// runMemory runs the scale-up w twice with a controller of ours watching all namespaces:
// once on an empty cluster and once with junk unrelated Pods and Secrets, which the
// label-restricted caches should never hold, and exporters unrelated Exporters, which the
// Exporter cache holds (it is not filtered: upstream-made Exporters carry no label of ours).
// With --baseline-bin, that build does the same after ours. Then the ReplicaSet controller
// runs the same scale-up with the same objects present: its Pod cache holds the unrelated
// Pods, as ours holds the unrelated Exporters.
func (b *Bench) runMemory(ctx context.Context, w Workload, junk, exporters int) (*MemoryResult, error) {
	res := &MemoryResult{Junk: junk, JunkExporters: exporters, JunkNamespace: nsJunk}
	if d := b.cfg.HeapProfileDir; d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
		b.heapProfiles = map[string]string{}
		for _, ns := range []string{nsMemWithout, nsMemWith, nsMemBaseWithout, nsMemBaseWith} {
			b.heapProfiles[ns] = filepath.Join(d, "heap-"+ns+".pprof")
		}
		defer func() { b.heapProfiles = nil }()
	}
	ours := &MemoryRuns{}
	var base *MemoryRuns
	if b.cfg.BaselineBin != "" {
		base = &MemoryRuns{}
	}
	var err error
	if ours.Without, err = b.memoryRun(ctx, Ours, w, nsMemWithout, "memory-without"); err != nil {
		return nil, err
	}
	if base != nil {
		if base.Without, err = b.memoryRun(ctx, Baseline, w, nsMemBaseWithout, "memory-without"); err != nil {
			return nil, err
		}
	}
	b.logf("memory: creating %d unrelated Pods, %d Secrets and %d Exporters in %s", junk, junk, exporters, nsJunk)
	start := time.Now()
	if res.Created, err = b.createJunk(ctx, junk, exporters); err != nil {
		return nil, err
	}
	res.JunkSeconds = time.Since(start).Seconds()
	b.logf("memory: created in %.1fs", res.JunkSeconds)
	if ours.With, err = b.memoryRun(ctx, Ours, w, nsMemWith, "memory-with"); err != nil {
		return nil, err
	}
	if base != nil {
		if base.With, err = b.memoryRun(ctx, Baseline, w, nsMemBaseWith, "memory-with"); err != nil {
			return nil, err
		}
	}
	if !b.cfg.OursOnly {
		b.logf("memory: %s by the ReplicaSet controller with them", w.Name)
		if res.ReplicaSet, err = b.runRS(ctx, w, nsMemRS, 0); err != nil {
			return nil, err
		}
		res.ReplicaSet.Workload = "memory-with"
	}
	for _, m := range []*MemoryRuns{ours, base} {
		if m == nil {
			continue
		}
		m.RSSRatio = ratio(float64(m.With.RSSBytes), float64(m.Without.RSSBytes))
		if res.ReplicaSet != nil {
			m.RSSRatioToReplicaSet = ratio(float64(m.With.RSSBytes), float64(res.ReplicaSet.RSSBytes))
		}
	}
	res.Without, res.With, res.RSSRatio, res.RSSRatioToReplicaSet = ours.Without, ours.With, ours.RSSRatio, ours.RSSRatioToReplicaSet
	res.Baseline = base
	// The unrelated objects stay for the rest of the run: deleting 20 000 Pods outlasts an
	// apiserver request and costs minutes of its CPU. The timed workloads' controllers watch
	// only their own namespace, and the simulator does not serve this one; the ReplicaSet
	// controller caches every Pod of the cluster, as it does in a real one (its RSS shows it).
	return res, nil
}

// memoryRun is one scale-up of the memory check by build ctl (Ours or Baseline) watching
// all namespaces. It then deletes the pool: the next controller, watching all namespaces
// too, must not find it.
func (b *Bench) memoryRun(ctx context.Context, ctl string, w Workload, ns, name string) (*Result, error) {
	b.logf("memory: %s by %s in %s", w.Name, ctl, ns)
	r, err := b.runOursAs(ctx, ctl, w, ns, nil, 0, &b.cfg.Limits)
	if err != nil {
		return nil, err
	}
	r.Workload = name
	return r, b.deletePools(ctx, ns)
}

// deletePools deletes the ExporterSets of ns and waits until the simulated garbage
// collector has removed their Exporters, Pods and Secrets.
func (b *Bench) deletePools(ctx context.Context, ns string) error {
	if err := b.cluster.Client.DeleteAllOf(ctx, &vtv1alpha1.ExporterSet{}, client.InNamespace(ns)); err != nil {
		return err
	}
	return b.waitEmpty(ctx, ns, &vtv1alpha1.ExporterSetList{}, &jumpstarterv1alpha1.ExporterList{}, &corev1.PodList{}, &corev1.SecretList{})
}

// waitEmpty waits until ns holds no objects of these kinds.
func (b *Bench) waitEmpty(ctx context.Context, ns string, lists ...client.ObjectList) error {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	return poll(ctx, 500*time.Millisecond, func() (bool, error) {
		for _, l := range lists {
			if err := b.cluster.Client.List(ctx, l, client.InNamespace(ns), client.Limit(1)); err != nil {
				return false, err
			}
			if apimeta.LenList(l) > 0 {
				return false, nil
			}
		}
		return true, nil
	})
}
