package scalebench

import (
	"context"
	"fmt"
	"io"
	"sync"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// Latency is what a pool's users feel of a scale-up, per instance: when each one could serve
// a lease. An instance is available when its Exporter is Online, Registered, enabled and not
// leased (ours), or its Pod is Ready (ReplicaSet): seen on the benchmark's own watch, not
// through the set's status, which trails by a status write.
type Latency struct {
	// FirstSeconds is from the set's create to the first instance available.
	FirstSeconds float64 `json:"firstAvailableSeconds"`
	// InstanceP50/P95 are from each instance's create (its Exporter, or Pod, first seen on
	// the watch) to that instance available.
	InstanceP50 float64 `json:"instanceP50Seconds"`
	InstanceP95 float64 `json:"instanceP95Seconds"`
	// LastSeconds is from the set's create to the last instance available: the scale-up's
	// ready time less this is how long the set's status trailed its instances.
	LastSeconds float64 `json:"lastAvailableSeconds"`
}

// instanceTracker follows the instances of one namespace during a scale-up.
type instanceTracker struct {
	mu        sync.Mutex
	created   map[string]time.Time
	available map[string]time.Time
}

// trackInstances watches ns's Exporters (ours) or Pods (ReplicaSet) until ctx ends. It
// returns once the initial list is done, so nothing created afterwards is missed.
func (b *Bench) trackInstances(ctx context.Context, ns, controller string) (*instanceTracker, error) {
	t := &instanceTracker{created: map[string]time.Time{}, available: map[string]time.Time{}}
	var list client.ObjectList = &jumpstarterv1alpha1.ExporterList{}
	avail := func(o client.Object) bool {
		e := o.(*jumpstarterv1alpha1.Exporter)
		return exporterAvailable(e)
	}
	if controller == ReplicaSet {
		list = &corev1.PodList{}
		avail = func(o client.Object) bool {
			p := o.(*corev1.Pod)
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady {
					return c.Status == corev1.ConditionTrue
				}
			}
			return false
		}
	}
	listed := make(chan error, 1)
	go func() {
		_ = watchEachFrom(ctx, b.cluster.Client, list, ns, listed, func(ev watch.EventType, o client.Object) bool {
			if ev == watch.Deleted || o.GetLabels()["probe"] == "true" {
				return false
			}
			now := time.Now()
			t.mu.Lock()
			defer t.mu.Unlock()
			if _, ok := t.created[o.GetName()]; !ok {
				t.created[o.GetName()] = now
			}
			if _, ok := t.available[o.GetName()]; !ok && avail(o) {
				t.available[o.GetName()] = now
			}
			return false
		})
	}()
	select {
	case err := <-listed:
		return t, err
	case <-ctx.Done():
		return t, ctx.Err()
	}
}

// exporterAvailable is an Exporter that can take a lease now.
func exporterAvailable(e *jumpstarterv1alpha1.Exporter) bool {
	return apimeta.IsStatusConditionTrue(e.Status.Conditions, jumpstarterv1alpha1.ExporterConditionOnline) &&
		apimeta.IsStatusConditionTrue(e.Status.Conditions, jumpstarterv1alpha1.ExporterConditionRegistered) &&
		e.IsEnabled() && (e.Status.LeaseRef == nil || e.Status.LeaseRef.Name == "")
}

// latency summarizes what the tracker saw of a scale-up that began at start.
func (t *instanceTracker) latency(start time.Time) *Latency {
	t.mu.Lock()
	defer t.mu.Unlock()
	var per []time.Duration
	var first, last time.Time
	for name, at := range t.available {
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
		per = append(per, at.Sub(t.created[name]))
	}
	if first.IsZero() {
		return nil
	}
	return &Latency{FirstSeconds: first.Sub(start).Seconds(), LastSeconds: last.Sub(start).Seconds(), InstanceP50: percentile(per, 50), InstanceP95: percentile(per, 95)}
}

// firstCreated is when the first instance was seen on the watch (zero when none was).
func (t *instanceTracker) firstCreated() time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	var first time.Time
	for _, at := range t.created {
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	return first
}

// writeLatency prints the per-instance latency of the single-set scale-ups and the storm's
// replacement latency.
func (r *Report) writeLatency(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := false
	for _, s := range r.Summary {
		if s.Latency == nil {
			continue
		}
		if !header {
			fmt.Fprintln(w, "\nlatency: set create -> first and last instance available; each instance's create -> available (medians of the runs)")
			fmt.Fprintln(tw, "workload\tcontroller\tfirst s\tlast s\tinstance p50 s\tinstance p95 s\t")
			header = true
		}
		fmt.Fprintf(tw, "%s\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t\n", s.Workload, s.Controller, s.Latency.FirstSeconds, s.Latency.LastSeconds, s.Latency.InstanceP50, s.Latency.InstanceP95)
	}
	_ = tw.Flush()
}

// latencyTargets judges issue 23's latency targets on the medians: set create -> first
// available at most 0.6 s and at most upstream's (when it ran), and the storm's lease wait
// and release -> replacement p95 at most 0.8 x upstream's.
func (r *Report) latencyTargets() []Target {
	var out []Target
	find := func(workload, controller string) *Summary {
		for _, s := range r.Summary {
			if s.Workload == workload && s.Controller == controller {
				return s
			}
		}
		return nil
	}
	for _, s := range r.Summary {
		if s.Controller != Ours {
			continue
		}
		up := find(s.Workload, Upstream)
		switch {
		case s.Latency != nil:
			out = append(out, Target{Name: "first instance available <= 0.6 s (" + s.Workload + ")",
				Value: fmt.Sprintf("%.2f s", s.Latency.FirstSeconds), Met: s.Latency.FirstSeconds <= 0.6, Scored: true})
			if up != nil && up.Latency != nil {
				out = append(out, Target{Name: "first instance available <= upstream's (" + s.Workload + ")",
					Value: fmt.Sprintf("%.2f s vs %.2f s", s.Latency.FirstSeconds, up.Latency.FirstSeconds), Met: s.Latency.FirstSeconds <= up.Latency.FirstSeconds, Scored: true})
			}
		case s.Storm != nil && up != nil && up.Storm != nil:
			out = append(out,
				Target{Name: "storm lease wait p95 <= 0.8 x upstream's",
					Value: fmt.Sprintf("%.2f s vs %.2f s", s.Storm.LeaseWaitP95, up.Storm.LeaseWaitP95), Met: s.Storm.LeaseWaitP95 <= 0.8*up.Storm.LeaseWaitP95, Scored: true},
				Target{Name: "storm release -> replacement p95 <= 0.8 x upstream's",
					Value: fmt.Sprintf("%.2f s vs %.2f s", s.Storm.ReleaseP95, up.Storm.ReleaseP95), Met: s.Storm.ReleaseP95 <= 0.8*up.Storm.ReleaseP95, Scored: true})
		}
	}
	return out
}
