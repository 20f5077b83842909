package scalebench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// Workload is a scale-up from zero: Sets sets (or ReplicaSets) of PerSet instances each.
type Workload struct {
	Name   string `json:"name"`
	Sets   int    `json:"sets"`
	PerSet int32  `json:"perSet"`
}

// Instances is the number of instances (Pods) the workload brings up.
func (w Workload) Instances() int { return w.Sets * int(w.PerSet) }

// Controller names in results.
const (
	Ours       = "exporterset"
	ReplicaSet = "replicaset"
	// Upstream is upstream Jumpstarter's exporter-set controller (Config.UpstreamBin).
	Upstream = "upstream"
	// Baseline is another build of ours (Config.BaselineBin), to compare two versions in one
	// run.
	Baseline = "exporterset-baseline"
)

// isOurs reports a contender that is a build of our controller.
func isOurs(controller string) bool { return controller == Ours || controller == Baseline }

// Result is one run of one workload by one controller.
type Result struct {
	Workload   string `json:"workload"`
	Controller string `json:"controller"`
	Repeat     int    `json:"repeat"`
	Namespace  string `json:"namespace"`
	Instances  int    `json:"instances"`
	// ObjectsPerInstance is what the controller creates per instance: Exporter, config
	// Secret and Pod for ours, the Pod for a ReplicaSet.
	ObjectsPerInstance int `json:"objectsPerInstance"`
	// ReadySeconds is from the first create of a set until every set reports all its
	// instances available (ours: status.availableReplicas; ReplicaSet: status.readyReplicas).
	ReadySeconds float64 `json:"readySeconds"`
	// Requests are the controller's requests from that first create until Settle after
	// ready, counted by the apiserver (audit log).
	Requests Requests `json:"requests"`
	// ClientRequests is the controller's own count over the same span
	// (rest_client_requests_total by HTTP method); ours only.
	ClientRequests map[string]float64 `json:"clientRequests,omitempty"`
	// Reconciles is the number of reconciles over the same span; ours only.
	Reconciles float64 `json:"reconciles,omitempty"`
	// HeapBytes (ours only), RSSBytes and PeakRSSBytes are the controller's at the end.
	HeapBytes    float64 `json:"heapBytes,omitempty"`
	RSSBytes     int64   `json:"rssBytes"`
	PeakRSSBytes int64   `json:"peakRssBytes"`
	// CPU is the CPU time each party used over the same span as Requests.
	CPU CPU `json:"cpuSeconds"`

	// Latency is the per-instance view of a single-set scale-up (nil for other workloads).
	Latency *Latency `json:"latency,omitempty"`

	// Storm is set for the lease storm.
	Storm *StormResult `json:"storm,omitempty"`
}

// RequestsPerInstance is Requests.Total / Instances.
func (r *Result) RequestsPerInstance() float64 {
	return ratio(float64(r.Requests.Total), float64(r.Instances))
}

// RequestsPerObject is Requests.Total per object created.
func (r *Result) RequestsPerObject() float64 {
	return ratio(float64(r.Requests.Total), float64(r.Instances*r.ObjectsPerInstance))
}

// RequestsPerObjectNoEvents is RequestsPerObject without the requests on Events.
func (r *Result) RequestsPerObjectNoEvents() float64 {
	return ratio(float64(r.Requests.Total-r.Requests.Events), float64(r.Instances*r.ObjectsPerInstance))
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// settle is how long requests are still counted after ready: the status writes and
// reconciles that follow the last instance becoming ready belong to the scale-up.
const settle = 2 * time.Second

// measure is what both controllers' runs share: the audit mark, the start time and the CPU
// times then.
type measure struct {
	offset int64
	start  time.Time
	pid    int
	cpu    cpuSample
}

func (b *Bench) begin(controllerPID int) (measure, error) {
	off, err := b.cluster.Audit.Mark()
	return measure{offset: off, start: time.Now(), pid: controllerPID, cpu: b.cpu.sample(controllerPID)}, err
}

func (b *Bench) requests(m measure, user string, end time.Time) (Requests, error) {
	return b.cluster.Audit.Count(m.offset, user, m.start, end)
}

// runOurs scales w up in ns with a fresh exporterset-controller watching the namespaces
// watched (all when empty).
func (b *Bench) runOurs(ctx context.Context, w Workload, ns string, watched []string, repeat int) (*Result, error) {
	return b.runOursLimited(ctx, w, ns, watched, repeat, &b.cfg.Limits)
}

// runOursLimited is runOurs with the controller's rate limits lim (nil: its defaults).
func (b *Bench) runOursLimited(ctx context.Context, w Workload, ns string, watched []string, repeat int, lim *Limits) (*Result, error) {
	return b.runOursAs(ctx, Ours, w, ns, watched, repeat, lim)
}

// oursBin is the binary of contender ctl (Ours or Baseline).
func (b *Bench) oursBin(ctl string) string {
	if ctl == Baseline {
		return b.cfg.BaselineBin
	}
	return b.cfg.ControllerBin
}

// runOursAs is runOursLimited with the build of contender ctl (Ours or Baseline).
func (b *Bench) runOursAs(ctx context.Context, ctlName string, w Workload, ns string, watched []string, repeat int, lim *Limits) (*Result, error) {
	if err := b.fx.prepareOurs(ctx, b.cluster.Client, ns); err != nil {
		return nil, err
	}
	extra, heapOut := b.cfg.OursArgs, b.heapProfiles[ns]
	var pprofPort int
	if heapOut != "" {
		var err error
		if pprofPort, err = freePort(); err != nil {
			return nil, err
		}
		extra = append(slices.Clip(extra), "--pprof-bind-address=127.0.0.1:"+strconv.Itoa(pprofPort))
	}
	ctl, err := startOurs(ctx, b.cluster, b.oursBin(ctlName), b.cfg.WorkDir, ns, watched, lim, extra)
	if err != nil {
		return nil, err
	}
	if heapOut != "" {
		ctl.heapURL, ctl.heapOut = fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap", pprofPort), heapOut
	}
	defer ctl.stop()
	before, err := ctl.scrape(ctx)
	if err != nil {
		return nil, err
	}
	tctx, untrack := context.WithCancel(ctx)
	defer untrack()
	tr, err := b.trackInstances(tctx, ns, Ours)
	if err != nil {
		return nil, err
	}
	m, err := b.begin(ctl.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	err = forEach(ctx, w.Sets, 16, func(i int) error {
		return b.cluster.Client.Create(ctx, b.fx.exporterSet(ns, setName(i), w.PerSet))
	})
	if err != nil {
		return nil, err
	}
	ready, err := b.waitSets(ctx, ns, w, func(o client.Object) bool {
		s := o.(*vtv1alpha1.ExporterSet)
		return s.Status.AvailableReplicas >= s.Spec.MinReplicas
	}, ctl.exited)
	if err != nil {
		return nil, err
	}
	r, _, err := b.finishOurs(ctx, ctl, before, m, ready, &Result{
		Workload: w.Name, Controller: ctlName, Repeat: repeat, Namespace: ns,
		Instances: w.Instances(), ObjectsPerInstance: 3,
	})
	if err == nil && w.Sets == 1 {
		r.Latency = tr.latency(m.start)
	}
	return r, err
}

// finishOurs waits out the settle time, fills the measurements of a run of ours and stops
// the controller. It returns the last scrape too.
func (b *Bench) finishOurs(ctx context.Context, ctl *ours, before ctrlMetrics, m measure, ready time.Time, r *Result) (*Result, ctrlMetrics, error) {
	r.ReadySeconds = ready.Sub(m.start).Seconds()
	end := ready.Add(settle)
	time.Sleep(time.Until(end))
	after, err := ctl.scrape(ctx)
	if err != nil {
		return nil, after, err
	}
	r.ClientRequests = map[string]float64{}
	for k, v := range after.clientRequests {
		if d := v - before.clientRequests[k]; d > 0 {
			r.ClientRequests[k] = d
		}
	}
	r.Reconciles = after.reconciles - before.reconciles
	r.HeapBytes = after.heapAlloc
	r.CPU = b.cpu.since(m.cpu, m.pid)
	if err := ctl.saveHeapProfile(ctx); err != nil {
		return nil, after, err
	}
	if r.RSSBytes, r.PeakRSSBytes, err = ctl.memory(); err != nil {
		return nil, after, err
	}
	ctl.stop()
	if r.Requests, err = b.requests(m, userOurs, end); err != nil {
		return nil, after, err
	}
	return r, after, nil
}

// runRS brings up the same number of Pods with ReplicaSets, with a fresh
// kube-controller-manager.
func (b *Bench) runRS(ctx context.Context, w Workload, ns string, repeat int) (*Result, error) {
	if err := b.fx.prepareRS(ctx, b.cluster.Client, ns); err != nil {
		return nil, err
	}
	ctl, err := startReplicaSetController(ctx, b.cluster, b.cfg.KCMBin, b.cfg.WorkDir, ns, ns, b.cfg.Limits)
	if err != nil {
		return nil, err
	}
	defer ctl.stop()
	tctx, untrack := context.WithCancel(ctx)
	defer untrack()
	tr, err := b.trackInstances(tctx, ns, ReplicaSet)
	if err != nil {
		return nil, err
	}
	m, err := b.begin(ctl.cmd.Process.Pid)
	if err != nil {
		return nil, err
	}
	err = forEach(ctx, w.Sets, 16, func(i int) error {
		return b.cluster.Client.Create(ctx, b.fx.replicaSet(ns, setName(i), w.PerSet))
	})
	if err != nil {
		return nil, err
	}
	ready, err := b.waitRS(ctx, ns, w, ctl.exited)
	if err != nil {
		return nil, err
	}
	r := &Result{
		Workload: w.Name, Controller: ReplicaSet, Repeat: repeat, Namespace: ns,
		Instances: w.Instances(), ObjectsPerInstance: 1, ReadySeconds: ready.Sub(m.start).Seconds(),
	}
	if w.Sets == 1 {
		r.Latency = tr.latency(m.start)
	}
	end := ready.Add(settle)
	time.Sleep(time.Until(end))
	r.CPU = b.cpu.since(m.cpu, m.pid)
	if r.RSSBytes, r.PeakRSSBytes, err = ctl.memory(); err != nil {
		return nil, err
	}
	ctl.stop()
	if r.Requests, err = b.requests(m, userRS, end); err != nil {
		return nil, err
	}
	return r, nil
}

func setName(i int) string { return fmt.Sprintf("pool-%03d", i) }

// waitSets waits until w.Sets ExporterSets in ns satisfy done, and returns when that was
// seen. alive reports a controller that died, so a crash fails fast instead of timing out.
func (b *Bench) waitSets(ctx context.Context, ns string, w Workload, done func(client.Object) bool, alive func() error) (time.Time, error) {
	return b.waitAll(ctx, &vtv1alpha1.ExporterSetList{}, ns, w.Sets, done, alive)
}

func (b *Bench) waitRS(ctx context.Context, ns string, w Workload, alive func() error) (time.Time, error) {
	return b.waitAll(ctx, &appsv1.ReplicaSetList{}, ns, w.Sets, func(o client.Object) bool {
		rs := o.(*appsv1.ReplicaSet)
		if rs.Labels["probe"] == "true" || rs.Spec.Template.Labels["probe"] == "true" {
			return false
		}
		return rs.Status.ReadyReplicas >= *rs.Spec.Replicas
	}, alive)
}

// waitAll watches list's kind in ns until n objects satisfy done.
func (b *Bench) waitAll(ctx context.Context, list client.ObjectList, ns string, n int, done func(client.Object) bool, alive func() error) (time.Time, error) {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	go func() {
		// A dead controller ends the wait at once.
		_ = poll(ctx, 500*time.Millisecond, func() (bool, error) {
			if alive() != nil {
				cancel()
				return true, nil
			}
			return false, nil
		})
	}()
	ok := map[string]bool{}
	var at time.Time
	err := watchEach(ctx, b.cluster.Client, list, ns, func(t watch.EventType, o client.Object) bool {
		ok[o.GetName()] = t != watch.Deleted && done(o)
		count := 0
		for _, v := range ok {
			if v {
				count++
			}
		}
		if count >= n {
			at = time.Now()
			return true
		}
		return false
	})
	if err != nil {
		if aerr := alive(); aerr != nil {
			return at, aerr
		}
		return at, fmt.Errorf("waiting for %d ready in %s: %w", n, ns, err)
	}
	return at, nil
}

// forEach runs f(0..n-1) with at most par at once and returns the first error.
func forEach(ctx context.Context, n, par int, f func(int) error) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, par)
	for i := 0; i < n; i++ {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := f(i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}
