package scalebench

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/exporterset/exporterset/internal/testing/jumpsim"
)

// Config is what a benchmark run does.
type Config struct {
	// ControllerBin is the built exporterset-controller; KCMBin kube-controller-manager.
	ControllerBin, KCMBin string
	// OursArgs are extra flags of every exporterset-controller run (e.g. a pprof address).
	OursArgs []string
	// Assets is the directory of etcd and kube-apiserver.
	Assets string
	// WorkDir holds kubeconfigs, the audit log and the controllers' logs.
	WorkDir string
	// Limits are given to both controllers.
	Limits Limits
	// Sizes are the single-set scale-ups (0 -> N).
	Sizes []int32
	// MultiSets x MultiPerSet is the many-sets workload (skipped when 0).
	MultiSets   int
	MultiPerSet int32
	// StormLeases is the number of leases of the lease storm (skipped when 0).
	StormLeases int
	// StormWarm is the storm pool's minAvailableReplicas (0: one per client, 10).
	StormWarm int
	// Junk is the number of unrelated Pods and of Secrets of the memory check,
	// JunkExporters the number of unrelated Exporters (the check is skipped when both are 0),
	// MemoryPool the size of its scale-up.
	Junk          int
	JunkExporters int
	MemoryPool    int32
	// HeapProfileDir, when set, receives a heap profile of each of our memory-check runs,
	// taken just before its RSS is read (heap-<namespace>.pprof).
	HeapProfileDir string
	// DefaultLimitsSize, when not 0, adds one scale-up 0 -> DefaultLimitsSize of ours with
	// the binary's own --kube-api-qps/--kube-api-burst defaults, to show whether they throttle.
	DefaultLimitsSize int32
	// FreshNamespaces is how many times the fresh-namespace case runs (freshns.go; 0 skips).
	FreshNamespaces int
	// Repeats is how often each timed workload runs; medians are reported.
	Repeats int
	// SimWorkers is the simulator's concurrency per component.
	SimWorkers int
	// Timeout bounds each wait.
	Timeout time.Duration
	// AuditAll records every client's requests in the audit log (the simulator's and the
	// benchmark's too), to follow a whole pipeline; the counts stay per controller.
	AuditAll bool
	// OursOnly skips every ReplicaSet-controller run (no kube-controller-manager needed):
	// for a quick look at our own figures.
	OursOnly bool
	// UpstreamBin, when set, is upstream's exporter-set controller binary (its flags:
	// --provisioner, NAMESPACE in the environment), run as a third contender on the same
	// simulator: the single-set scale-ups and the storm (not the many-sets workload, which it
	// would serve with one process per namespace).
	UpstreamBin string
	// BaselineBin, when set, is another build of ours run as a contender of its own
	// (Baseline), alternating with ControllerBin: a before/after comparison in one run.
	BaselineBin string
	// StormClients is the number of storm clients (0: 10); StormMax the storm pool's
	// maxReplicas (0: unbounded).
	StormClients int
	StormMax     int
	// Log receives progress lines (default stderr).
	Log io.Writer
}

// Bench is one benchmark run: a cluster, the simulator, and the fixtures.
type Bench struct {
	cfg     Config
	cluster *Cluster
	fx      *fixtures
	sim     *jumpsim.Simulator
	cpu     *cpuMeter
	// heapProfiles maps a namespace to the file that its run of ours saves a heap profile
	// to (Config.HeapProfileDir).
	heapProfiles map[string]string
}

func (b *Bench) logf(format string, args ...any) {
	fmt.Fprintf(b.cfg.Log, "%s bench-scale: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

// workloads are the timed scale-ups, in the order they run.
func (c Config) workloads() []Workload {
	var out []Workload
	for _, n := range c.Sizes {
		out = append(out, Workload{Name: fmt.Sprintf("single-%d", n), Sets: 1, PerSet: n})
	}
	if c.MultiSets > 0 && c.MultiPerSet > 0 {
		out = append(out, Workload{Name: fmt.Sprintf("multi-%dx%d", c.MultiSets, c.MultiPerSet), Sets: c.MultiSets, PerSet: c.MultiPerSet})
	}
	return out
}

func nsFor(w Workload, controller string, repeat int) string {
	return fmt.Sprintf("%s-%s-%d", w.Name, shortName(controller), repeat)
}

func shortName(controller string) string {
	switch controller {
	case ReplicaSet:
		return "rs"
	case Upstream:
		return "up"
	case Baseline:
		return "base"
	}
	return "ours"
}

// stormNS is the storm's namespace; ours keeps the name it always had.
func stormNS(controller string, repeat int) string {
	if controller == Ours {
		return fmt.Sprintf("storm-%d", repeat)
	}
	return fmt.Sprintf("storm-%s-%d", shortName(controller), repeat)
}

const (
	nsWarmOurs      = "warmup-ours"
	nsWarmRS        = "warmup-rs"
	nsWarmUpstream  = "warmup-up"
	nsWarmBaseline  = "warmup-base"
	nsDefaultLimits = "default-limits"
)

// contenders are the controllers that run workload w in repeat r, in order: who goes first
// alternates, so that none always runs on the fresher cluster.
func (c Config) contenders(w Workload, r int) []string {
	out := []string{Ours}
	if c.BaselineBin != "" {
		out = append(out, Baseline)
	}
	if !c.OursOnly {
		out = append(out, ReplicaSet)
	}
	if c.UpstreamBin != "" && w.Sets == 1 {
		out = append(out, Upstream)
	}
	// Rotate by the repeat: each contender goes first in turn.
	k := (r - 1) % len(out)
	return append(out[k:], out[:k]...)
}

// runsMemory reports whether the memory check runs.
func (c Config) runsMemory() bool { return c.Junk > 0 || c.JunkExporters > 0 }

// namespaces lists every namespace the run uses: the simulator serves exactly these (not
// the memory check's junk namespace).
func (c Config) namespaces() []string {
	out := []string{nsWarmOurs, nsWarmRS, nsWarmUpstream, nsWarmBaseline}
	if c.runsMemory() {
		out = append(out, nsMemWithout, nsMemWith, nsMemBaseWithout, nsMemBaseWith, nsMemRS)
	}
	if c.DefaultLimitsSize > 0 {
		out = append(out, nsDefaultLimits)
	}
	for r := 1; r <= c.FreshNamespaces; r++ {
		out = append(out, freshNS(r))
	}
	for r := 1; r <= c.Repeats; r++ {
		for _, w := range c.workloads() {
			out = append(out, nsFor(w, Ours, r), nsFor(w, ReplicaSet, r), nsFor(w, Upstream, r), nsFor(w, Baseline, r))
		}
		if c.StormLeases > 0 {
			out = append(out, stormNS(Ours, r), stormNS(Upstream, r), stormNS(Baseline, r))
		}
	}
	return out
}

// Run starts the cluster and the simulator, runs every workload and returns the report.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Log == nil {
		cfg.Log = os.Stderr
	}
	b := &Bench{cfg: cfg}
	rep := &Report{Started: time.Now().UTC(), Machine: describeMachine(), Limits: cfg.Limits, Repeats: cfg.Repeats}
	var err error
	if b.fx, err = loadFixtures(ctx); err != nil {
		return nil, err
	}
	b.logf("starting kube-apiserver and etcd")
	if b.cluster, err = StartCluster(cfg.Assets, cfg.WorkDir, cfg.AuditAll); err != nil {
		return nil, err
	}
	defer func() { _ = b.cluster.Stop() }()
	b.cpu = newCPUMeter()
	if err := createNamespaces(ctx, b.cluster.Client, cfg.namespaces()); err != nil {
		return nil, err
	}
	b.sim, err = jumpsim.New(b.cluster.Config(userSim), jumpsim.WithNamespaces(cfg.namespaces()...), jumpsim.WithWorkers(cfg.SimWorkers))
	if err != nil {
		return nil, err
	}
	if err := b.sim.Start(ctx); err != nil {
		return nil, err
	}
	defer func() { _ = b.sim.Stop() }()
	apiBefore, _ := b.cluster.APIServerRequests(ctx)

	if cfg.runsMemory() {
		if rep.Memory, err = b.runMemory(ctx, Workload{Name: "memory", Sets: 1, PerSet: cfg.MemoryPool}, cfg.Junk, cfg.JunkExporters); err != nil {
			return nil, fmt.Errorf("memory check: %w", err)
		}
	}
	if len(cfg.workloads()) == 0 && cfg.StormLeases == 0 && cfg.DefaultLimitsSize == 0 && cfg.FreshNamespaces == 0 {
		// Nothing timed follows (the memory check alone): no warm-up to run.
		return b.finish(ctx, rep, apiBefore), nil
	}
	// A first, unreported round: the first objects of each kind, the apiserver's and the
	// simulator's caches and the page cache warm up here, not in the first measurement.
	b.logf("warm-up")
	warm := Workload{Name: "warmup", Sets: 1, PerSet: 20}
	if _, err := b.runOurs(ctx, warm, nsWarmOurs, []string{nsWarmOurs}, 0); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	if !cfg.OursOnly {
		if _, err := b.runRS(ctx, warm, nsWarmRS, 0); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	if cfg.BaselineBin != "" {
		if _, err := b.runOursAs(ctx, Baseline, warm, nsWarmBaseline, []string{nsWarmBaseline}, 0, &cfg.Limits); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}
	if cfg.UpstreamBin != "" {
		if _, err := b.runUpstream(ctx, warm, nsWarmUpstream, 0); err != nil {
			return nil, fmt.Errorf("warm-up: %w", err)
		}
	}

	if n := cfg.FreshNamespaces; n > 0 {
		if rep.FreshNamespace, err = b.runFreshNamespaces(ctx, n); err != nil {
			return nil, fmt.Errorf("fresh namespace: %w", err)
		}
	}
	for r := 1; r <= cfg.Repeats; r++ {
		for _, w := range cfg.workloads() {
			order := cfg.contenders(w, r)
			for _, ctl := range order {
				ns := nsFor(w, ctl, r)
				var res *Result
				switch ctl {
				case Ours:
					res, err = b.runOurs(ctx, w, ns, []string{ns}, r)
				case Upstream:
					res, err = b.runUpstream(ctx, w, ns, r)
				case Baseline:
					res, err = b.runOursAs(ctx, Baseline, w, ns, []string{ns}, r, &cfg.Limits)
				default:
					res, err = b.runRS(ctx, w, ns, r)
				}
				if err != nil {
					return nil, fmt.Errorf("%s %s (repeat %d): %w", w.Name, ctl, r, err)
				}
				last := ""
				if res.Latency != nil {
					last = fmt.Sprintf(", last instance available at %.2fs", res.Latency.LastSeconds)
				}
				b.logf("%-14s %-11s repeat %d: ready in %6.2fs, %5d requests (%.2f/instance)%s", w.Name, ctl, r, res.ReadySeconds, res.Requests.Total, res.RequestsPerInstance(), last)
				rep.Results = append(rep.Results, res)
			}
		}
		if cfg.StormLeases > 0 {
			ctls := cfg.contenders(Workload{Name: "storm", Sets: 1}, r)
			ctls = slices.DeleteFunc(ctls, func(c string) bool { return c == ReplicaSet })
			for _, ctl := range ctls {
				res, err := b.runStorm(ctx, ctl, cfg.StormLeases, stormNS(ctl, r), r)
				if err != nil {
					return nil, fmt.Errorf("storm %s (repeat %d): %w", ctl, r, err)
				}
				b.logf("storm %-11s repeat %d: %d leases in %.2fs, %d refused, lease wait p95 %.2fs, release->available p50 %.2fs p95 %.2fs p99 %.2fs", ctl, r, res.Storm.Leases, res.Storm.Seconds,
					res.Storm.Refused, res.Storm.LeaseWaitP95, res.Storm.ReleaseP50, res.Storm.ReleaseP95, res.Storm.ReleaseP99)
				rep.Results = append(rep.Results, res)
			}
		}
	}
	if n := cfg.DefaultLimitsSize; n > 0 {
		w := Workload{Name: fmt.Sprintf("single-%d", n), Sets: 1, PerSet: n}
		res, err := b.runOursLimited(ctx, w, nsDefaultLimits, []string{nsDefaultLimits}, 0, nil)
		if err != nil {
			return nil, fmt.Errorf("%s with the default limits: %w", w.Name, err)
		}
		res.Workload = w.Name + " (binary's default QPS/burst)"
		b.logf("%s: ready in %.2fs", res.Workload, res.ReadySeconds)
		rep.DefaultLimits = res
	}
	return b.finish(ctx, rep, apiBefore), nil
}

// finish adds the API server's request counts since apiBefore and the summary to rep.
func (b *Bench) finish(ctx context.Context, rep *Report, apiBefore map[string]float64) *Report {
	if apiAfter, err := b.cluster.APIServerRequests(ctx); err == nil {
		rep.APIServerRequests = map[string]float64{}
		for k, v := range apiAfter {
			rep.APIServerRequests[k] = v - apiBefore[k]
		}
	}
	rep.Finished = time.Now().UTC()
	rep.summarize(b.cfg)
	return rep
}
