package scalebench

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// StormResult is what the lease storm measures beyond a scale-up's figures.
type StormResult struct {
	Leases  int `json:"leases"`
	Workers int `json:"workers"`
	// Warm is the pool's minAvailableReplicas.
	Warm int `json:"warm"`
	// Seconds is from the first lease until the last was released and the warm pool was
	// whole again.
	Seconds float64 `json:"seconds"`
	// Created is how many instances the controller created meanwhile.
	Created int `json:"created"`
	// ReleaseP50/P99 are the benchmark's view: from a release to the next instance that
	// became available for the first time, pairing releases and new instances in order
	// (the controller's metric pairs them the same way).
	ReleaseP50 float64 `json:"releaseToAvailableP50"`
	ReleaseP95 float64 `json:"releaseToAvailableP95"`
	ReleaseP99 float64 `json:"releaseToAvailableP99"`
	// LeaseWaitP50/P95/P99 are from a lease's create to its assignment: what a client waits.
	LeaseWaitP50 float64 `json:"leaseWaitP50"`
	LeaseWaitP95 float64 `json:"leaseWaitP95"`
	LeaseWaitP99 float64 `json:"leaseWaitP99"`
	// Refused is how many leases the core ended unassigned (Unsatisfiable: no enabled
	// Exporter matched them when they were created); their clients took the next lease.
	// Their waits are not in LeaseWait.
	Refused int `json:"refused"`
	// Max is the pool's maxReplicas (0: unbounded).
	Max int `json:"max,omitempty"`
	// ControllerP50/P99 estimate the same from the controller's histogram
	// exporterset_lease_release_to_available_seconds (bucket interpolation).
	ControllerP50   float64 `json:"controllerP50"`
	ControllerP99   float64 `json:"controllerP99"`
	ControllerCount float64 `json:"controllerCount"`
}

// stormClients is the default number of storm clients; each holds at most one lease at a
// time.
const stormClients = 10

// clients is the number of storm clients (Config.StormClients, default stormClients).
func (c Config) clients() int {
	if c.StormClients > 0 {
		return c.StormClients
	}
	return stormClients
}

// warm is the storm pool's warm buffer (Config.StormWarm, default the clients): leases are
// served from it, and every lease taken makes the controller create a replacement for it.
// A buffer of exactly stormClients is used up whenever a replacement is slower than a
// client's round; a larger one covers the storm, so its latency is the pipeline's alone.
func (c Config) warm() int {
	if c.StormWarm > 0 {
		return c.StormWarm
	}
	return c.clients()
}

// runStorm takes and releases n leases on a pool of minAvailableReplicas Config.warm() and
// maxReplicas Config.StormMax (ExitAndReplace: every leased exporter exits and is replaced),
// with Config.clients() clients each taking a lease, releasing it once assigned, and taking
// the next. ctlName is Ours, Baseline or Upstream.
func (b *Bench) runStorm(ctx context.Context, ctlName string, n int, ns string, repeat int) (*Result, error) {
	if err := b.fx.prepareOurs(ctx, b.cluster.Client, ns); err != nil {
		return nil, err
	}
	var ctl *ours // nil for upstream: no metrics to scrape
	var proc *process
	var err error
	if ctlName == Upstream {
		proc, err = startUpstream(ctx, b.cluster, b.cfg.UpstreamBin, b.cfg.WorkDir, ns)
	} else {
		ctl, err = startOurs(ctx, b.cluster, b.oursBin(ctlName), b.cfg.WorkDir, ns, []string{ns}, &b.cfg.Limits, b.cfg.OursArgs)
		if ctl != nil {
			proc = ctl.process
		}
	}
	if err != nil {
		return nil, err
	}
	defer proc.stop()
	set := b.fx.exporterSet(ns, "storm", 0)
	stormWarm := b.cfg.warm()
	clients := b.cfg.clients()
	set.Spec.MinAvailableReplicas = int32(stormWarm)
	set.Spec.MaxReplicas = ptr.To(int32(b.cfg.StormMax))
	set.Spec.RecycleStrategy = vtv1alpha1.RecycleExitAndReplace
	if err := b.cluster.Client.Create(ctx, set); err != nil {
		return nil, err
	}
	// Warm: the buffer is whole and nothing is leased. Seen on the Exporters themselves, so
	// that both controllers are judged alike (upstream's status is not relied on).
	waitWarm := func() (time.Time, error) { return b.waitAvailable(ctx, ns, stormWarm, proc.exited) }
	if _, err := waitWarm(); err != nil {
		return nil, err
	}

	sctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	tr := newStormTracker()
	// A watch that fails ends the storm (its clients would wait for nothing) with its error.
	var watchErr atomic.Value
	follow := func(list client.ObjectList, fn func(watch.EventType, client.Object)) {
		err := watchEach(sctx, b.cluster.Client, list, ns, func(t watch.EventType, o client.Object) bool {
			fn(t, o)
			return false
		})
		if err != nil && sctx.Err() == nil {
			watchErr.Store(err)
			cancel()
		}
	}
	go follow(&jumpstarterv1alpha1.LeaseList{}, func(_ watch.EventType, o client.Object) { tr.leaseSeen(o.(*jumpstarterv1alpha1.Lease)) })
	go follow(&jumpstarterv1alpha1.ExporterList{}, func(t watch.EventType, o client.Object) { tr.exporterSeen(t, o.(*jumpstarterv1alpha1.Exporter)) })
	// Exporters available before the storm are not replacements.
	time.Sleep(500 * time.Millisecond)
	tr.startCounting()

	var before ctrlMetrics
	if ctl != nil {
		if before, err = ctl.scrape(ctx); err != nil {
			return nil, err
		}
	}
	m, err := b.begin(proc.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	var next atomic.Int64
	selector := set.Spec.Selector.MatchLabels
	err = forEach(sctx, clients, clients, func(int) error {
		for {
			i := int(next.Add(1))
			if i > n {
				return nil
			}
			name := fmt.Sprintf("lease-%04d", i)
			assigned := tr.expect(name)
			l := &jumpstarterv1alpha1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: jumpstarterv1alpha1.LeaseSpec{
					ClientRef: corev1.LocalObjectReference{Name: "scalebench"},
					Selector:  metav1.LabelSelector{MatchLabels: selector},
				},
			}
			asked := time.Now()
			if err := b.cluster.Client.Create(sctx, l); err != nil {
				return err
			}
			select {
			case err := <-assigned:
				if errors.Is(err, errRefused) {
					tr.refusal()
					continue // the user's jmp got an error; the client takes the next lease
				}
				if err != nil {
					return err
				}
			case <-sctx.Done():
				return fmt.Errorf("lease %s not assigned: %w", name, sctx.Err())
			}
			tr.waited(time.Since(asked))
			tr.released(time.Now())
			patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"release":true}}`))
			if err := b.cluster.Client.Patch(sctx, l, patch); err != nil {
				return err
			}
		}
	})
	if werr, ok := watchErr.Load().(error); ok {
		err = werr
	}
	if err != nil {
		return nil, fmt.Errorf("lease storm: %w", err)
	}
	ready, err := waitWarm()
	if err != nil {
		return nil, err
	}
	r := &Result{Workload: "storm", Controller: ctlName, Repeat: repeat, Namespace: ns, ObjectsPerInstance: 3}
	var after ctrlMetrics
	if ctl != nil {
		r, after, err = b.finishOurs(ctx, ctl, before, m, ready, r)
	} else {
		r, err = b.finishProcess(proc, m, ready, userUpstream, r)
	}
	cancel()
	if err != nil {
		return nil, err
	}
	lat := tr.latencies()
	st := &StormResult{
		Leases: n, Workers: clients, Warm: stormWarm, Max: b.cfg.StormMax, Seconds: r.ReadySeconds,
		Created: tr.created(), Refused: tr.refusedCount(),
		ReleaseP50: percentile(lat, 50), ReleaseP95: percentile(lat, 95), ReleaseP99: percentile(lat, 99),
		LeaseWaitP50: percentile(tr.waits, 50), LeaseWaitP95: percentile(tr.waits, 95), LeaseWaitP99: percentile(tr.waits, 99),
	}
	if ctl != nil {
		st.Created = int(after.created - before.created)
		hist := diffBuckets(after.releaseBuckets, before.releaseBuckets)
		st.ControllerP50, st.ControllerP99 = histogramQuantile(0.5, hist), histogramQuantile(0.99, hist)
		st.ControllerCount = after.releaseCount - before.releaseCount
	}
	r.Instances = st.Created
	r.Storm = st
	return r, nil
}

// errRefused is a lease the core ended without assigning it.
var errRefused = errors.New("ended unassigned")

// stormTracker follows leases and exporters during the storm.
type stormTracker struct {
	mu        sync.Mutex
	waiting   map[string]chan error
	counting  bool
	available map[string]bool // exporters ever seen available
	seen      map[string]bool // exporters seen at all
	news      int             // exporters first seen after counting started
	releases  []time.Time
	fresh     []time.Time // first time a new exporter was available
	waits     []time.Duration
	refused   int
}

func (t *stormTracker) refusal() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.refused++
}

func (t *stormTracker) refusedCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.refused
}

func newStormTracker() *stormTracker {
	return &stormTracker{waiting: map[string]chan error{}, available: map[string]bool{}, seen: map[string]bool{}}
}

// expect returns a channel told when lease name is assigned (nil) or ends unassigned.
func (t *stormTracker) expect(name string) <-chan error {
	t.mu.Lock()
	defer t.mu.Unlock()
	ch := make(chan error, 1)
	t.waiting[name] = ch
	return ch
}

func (t *stormTracker) leaseSeen(l *jumpstarterv1alpha1.Lease) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ch, ok := t.waiting[l.Name]
	if !ok {
		return
	}
	switch {
	case l.Status.ExporterRef != nil:
		ch <- nil
	case l.Status.Ended:
		ch <- fmt.Errorf("lease %s: %w", l.Name, errRefused)
	default:
		return
	}
	delete(t.waiting, l.Name)
}

func (t *stormTracker) startCounting() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.counting = true
}

func (t *stormTracker) exporterSeen(ev watch.EventType, e *jumpstarterv1alpha1.Exporter) {
	if ev == watch.Deleted {
		return
	}
	avail := exporterAvailable(e)
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.seen[e.Name] {
		t.seen[e.Name] = true
		if t.counting {
			t.news++
		}
	}
	if !avail || t.available[e.Name] {
		return
	}
	t.available[e.Name] = true
	if t.counting {
		t.fresh = append(t.fresh, time.Now())
	}
}

// created is how many exporters appeared during the storm.
func (t *stormTracker) created() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.news
}

func (t *stormTracker) waited(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.waits = append(t.waits, d)
}

func (t *stormTracker) released(at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.releases = append(t.releases, at)
}

// latencies pairs each new available exporter with the oldest release still waiting, in
// time order.
func (t *stormTracker) latencies() []time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	rel := append([]time.Time(nil), t.releases...)
	fresh := append([]time.Time(nil), t.fresh...)
	sort.Slice(rel, func(i, j int) bool { return rel[i].Before(rel[j]) })
	sort.Slice(fresh, func(i, j int) bool { return fresh[i].Before(fresh[j]) })
	var out []time.Duration
	i := 0
	for _, f := range fresh {
		if i < len(rel) && !rel[i].After(f) {
			out = append(out, f.Sub(rel[i]))
			i++
		}
	}
	return out
}
