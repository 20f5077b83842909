package scalebench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the benchmark's output, written as JSON and printed as a table.
type Report struct {
	Started  time.Time `json:"started"`
	Finished time.Time `json:"finished"`
	Machine  Machine   `json:"machine"`
	Limits   Limits    `json:"limits"`
	Repeats  int       `json:"repeats"`
	// Results are every run; Summary their medians per workload and controller.
	Results []*Result     `json:"results"`
	Summary []*Summary    `json:"summary"`
	Ratios  []*Ratio      `json:"ratios"`
	Memory  *MemoryResult `json:"memory,omitempty"`
	// DefaultLimits is the scale-up run with the binary's default rate limits.
	DefaultLimits *Result `json:"defaultLimits,omitempty"`
	// FreshNamespace are the fresh-namespace runs (freshns.go).
	FreshNamespace []FreshNamespaceRun `json:"freshNamespace,omitempty"`
	Targets        []Target            `json:"targets"`
	// APIServerRequests is apiserver_request_total by verb over the whole run, every client
	// (simulator and benchmark included).
	APIServerRequests map[string]float64 `json:"apiserverRequests,omitempty"`
}

// Summary is the median of the runs of one workload by one controller.
type Summary struct {
	Workload           string    `json:"workload"`
	Controller         string    `json:"controller"`
	Runs               int       `json:"runs"`
	Instances          int       `json:"instances"`
	ObjectsPerInstance int       `json:"objectsPerInstance"`
	ReadySeconds       float64   `json:"readySeconds"`
	ReadyRuns          []float64 `json:"readySecondsRuns"`
	RequestsPerInst    float64   `json:"requestsPerInstance"`
	RequestsPerObject  float64   `json:"requestsPerObject"`
	// RequestsPerObjectNoEvents leaves out the Event writes.
	RequestsPerObjectNoEvents float64            `json:"requestsPerObjectNoEvents"`
	EventsPerInstance         float64            `json:"eventsPerInstance"`
	VerbsPerInstance          map[string]float64 `json:"verbsPerInstance"`
	ReconcilesPerInst         float64            `json:"reconcilesPerInstance,omitempty"`
	HeapMiB                   float64            `json:"heapMiB,omitempty"`
	RSSMiB                    float64            `json:"rssMiB"`
	// CPU is the median CPU seconds of each party.
	CPU CPU `json:"cpuSeconds"`
	// Latency holds the medians of the runs' per-instance figures (single-set scale-ups).
	Latency *Latency     `json:"latency,omitempty"`
	Storm   *StormResult `json:"storm,omitempty"`
}

// Ratio compares ours with the ReplicaSet controller on one workload (medians).
type Ratio struct {
	Workload          string  `json:"workload"`
	Time              float64 `json:"time"`
	RequestsPerInst   float64 `json:"requestsPerInstance"`
	RequestsPerObject float64 `json:"requestsPerObject"`
	// RequestsPerObjectNoEvents compares without the Event writes.
	RequestsPerObjectNoEvents float64 `json:"requestsPerObjectNoEvents"`
}

// Target is one of the targets and whether this run met it.
type Target struct {
	Name   string `json:"name"`
	Value  string `json:"value"`
	Met    bool   `json:"met"`
	Scored bool   `json:"scored"`
}

var verbs = []string{"create", "update", "patch", "delete", "get", "list", "watch"}

func (r *Report) summarize(cfg Config) {
	type key struct{ w, c string }
	groups := map[key][]*Result{}
	var order []key
	for _, res := range r.Results {
		k := key{res.Workload, res.Controller}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], res)
	}
	byKey := map[key]*Summary{}
	for _, k := range order {
		runs := groups[k]
		s := &Summary{Workload: k.w, Controller: k.c, Runs: len(runs), ObjectsPerInstance: runs[0].ObjectsPerInstance, VerbsPerInstance: map[string]float64{}}
		col := func(f func(*Result) float64) float64 {
			var xs []float64
			for _, x := range runs {
				xs = append(xs, f(x))
			}
			return median(xs)
		}
		s.Instances = int(col(func(x *Result) float64 { return float64(x.Instances) }))
		s.ReadySeconds = col(func(x *Result) float64 { return x.ReadySeconds })
		for _, x := range runs {
			s.ReadyRuns = append(s.ReadyRuns, x.ReadySeconds)
		}
		s.RequestsPerInst = col(func(x *Result) float64 { return x.RequestsPerInstance() })
		s.RequestsPerObject = col(func(x *Result) float64 { return x.RequestsPerObject() })
		s.RequestsPerObjectNoEvents = col(func(x *Result) float64 { return x.RequestsPerObjectNoEvents() })
		s.EventsPerInstance = col(func(x *Result) float64 { return ratio(float64(x.Requests.Events), float64(x.Instances)) })
		for _, v := range verbs {
			s.VerbsPerInstance[v] = col(func(x *Result) float64 { return ratio(float64(x.Requests.ByVerb[v]), float64(x.Instances)) })
		}
		s.ReconcilesPerInst = col(func(x *Result) float64 { return ratio(x.Reconciles, float64(x.Instances)) })
		s.HeapMiB = col(func(x *Result) float64 { return x.HeapBytes / (1 << 20) })
		s.RSSMiB = col(func(x *Result) float64 { return float64(x.RSSBytes) / (1 << 20) })
		s.CPU = CPU{
			Controller:   col(func(x *Result) float64 { return x.CPU.Controller }),
			ControlPlane: col(func(x *Result) float64 { return x.CPU.ControlPlane }),
			Simulator:    col(func(x *Result) float64 { return x.CPU.Simulator }),
		}
		if runs[0].Latency != nil {
			lcol := func(f func(*Latency) float64) float64 {
				return col(func(x *Result) float64 {
					if x.Latency == nil {
						return 0
					}
					return f(x.Latency)
				})
			}
			s.Latency = &Latency{
				FirstSeconds: lcol(func(l *Latency) float64 { return l.FirstSeconds }),
				LastSeconds:  lcol(func(l *Latency) float64 { return l.LastSeconds }),
				InstanceP50:  lcol(func(l *Latency) float64 { return l.InstanceP50 }),
				InstanceP95:  lcol(func(l *Latency) float64 { return l.InstanceP95 }),
			}
		}
		if runs[0].Storm != nil {
			st := *runs[0].Storm
			scol := func(f func(*StormResult) float64) float64 {
				return col(func(x *Result) float64 { return f(x.Storm) })
			}
			st.Seconds = scol(func(x *StormResult) float64 { return x.Seconds })
			st.Created = int(scol(func(x *StormResult) float64 { return float64(x.Created) }))
			st.Refused = 0
			for _, x := range runs {
				st.Refused += x.Storm.Refused // every refusal counts, not the median's
			}
			st.ReleaseP50 = scol(func(x *StormResult) float64 { return x.ReleaseP50 })
			st.ReleaseP95 = scol(func(x *StormResult) float64 { return x.ReleaseP95 })
			st.ReleaseP99 = scol(func(x *StormResult) float64 { return x.ReleaseP99 })
			st.LeaseWaitP50 = scol(func(x *StormResult) float64 { return x.LeaseWaitP50 })
			st.LeaseWaitP95 = scol(func(x *StormResult) float64 { return x.LeaseWaitP95 })
			st.LeaseWaitP99 = scol(func(x *StormResult) float64 { return x.LeaseWaitP99 })
			st.ControllerP50 = scol(func(x *StormResult) float64 { return x.ControllerP50 })
			st.ControllerP99 = scol(func(x *StormResult) float64 { return x.ControllerP99 })
			st.ControllerCount = scol(func(x *StormResult) float64 { return x.ControllerCount })
			s.Storm = &st
		}
		byKey[k] = s
		r.Summary = append(r.Summary, s)
	}
	for _, w := range cfg.workloads() {
		o, rs := byKey[key{w.Name, Ours}], byKey[key{w.Name, ReplicaSet}]
		if o == nil || rs == nil {
			continue
		}
		r.Ratios = append(r.Ratios, &Ratio{
			Workload: w.Name, Time: ratio(o.ReadySeconds, rs.ReadySeconds),
			RequestsPerInst: ratio(o.RequestsPerInst, rs.RequestsPerInst), RequestsPerObject: ratio(o.RequestsPerObject, rs.RequestsPerObject),
			RequestsPerObjectNoEvents: ratio(o.RequestsPerObjectNoEvents, rs.RequestsPerObjectNoEvents),
		})
	}
	r.Targets = r.targets(cfg, func(w string) *Summary { return byKey[key{w, Ours}] })
}

// targets judges the targets on the medians.
func (r *Report) targets(cfg Config, ours func(string) *Summary) []Target {
	var out []Target
	single := map[int32]*Summary{}
	for _, n := range cfg.Sizes {
		if s := ours(fmt.Sprintf("single-%d", n)); s != nil {
			single[n] = s
		}
	}
	if s := single[300]; s != nil {
		out = append(out, Target{Name: "0 -> 300 in under 5 s", Value: fmt.Sprintf("%.2f s", s.ReadySeconds), Met: s.ReadySeconds < 5, Scored: true})
	}
	sizes := append([]int32(nil), cfg.Sizes...)
	sort.Slice(sizes, func(i, j int) bool { return sizes[i] < sizes[j] })
	for _, n := range sizes {
		a, b := single[n], single[2*n]
		if a == nil || b == nil {
			continue
		}
		x := ratio(b.ReadySeconds, a.ReadySeconds)
		out = append(out, Target{Name: fmt.Sprintf("2 x N costs <= 2.2 x the time (%d -> %d)", n, 2*n), Value: fmt.Sprintf("%.2f x", x), Met: x <= 2.2, Scored: true})
	}
	for _, q := range r.Ratios {
		out = append(out,
			Target{Name: "time-to-ready <= 1.5 x ReplicaSet (" + q.Workload + ")", Value: fmt.Sprintf("%.2f x", q.Time), Met: q.Time <= 1.5, Scored: true},
			Target{Name: "requests per object <= 1.2 x ReplicaSet (" + q.Workload + ")", Value: fmt.Sprintf("%.2f x", q.RequestsPerObject), Met: q.RequestsPerObject <= 1.2, Scored: true})
	}
	out = append(out, r.latencyTargets()...)
	if m := r.Memory; m != nil {
		out = append(out, Target{Name: fmt.Sprintf("RSS with %s within 10%% of without", m.Created), Value: fmt.Sprintf("%.3f x", m.RSSRatio), Met: m.RSSRatio <= 1.10 && m.RSSRatio >= 0.90, Scored: true})
		if m.ReplicaSet != nil {
			out = append(out, Target{Name: fmt.Sprintf("RSS with %s <= 1.2 x ReplicaSet's", m.Created), Value: fmt.Sprintf("%.3f x", m.RSSRatioToReplicaSet), Met: m.RSSRatioToReplicaSet <= 1.2, Scored: true})
		}
	}
	return out
}

// WriteJSON writes the report to path, creating its directory.
func (r *Report) WriteJSON(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// WriteTable prints the report for people.
func (r *Report) WriteTable(w io.Writer) {
	m := r.Machine
	fmt.Fprintf(w, "Scale benchmark, %s, %d cores (%s), %.0f GiB, kernel %s, %s; load average at start %s\n",
		r.Started.Format("2006-01-02 15:04 UTC"), m.Cores, m.CPU, m.MemoryGiB, m.Kernel, m.Go, m.LoadAverage)
	fmt.Fprintf(w, "kube-apiserver/kube-controller-manager v1.37.2 (envtest), simulated Jumpstarter core + kubelet (internal/testing/jumpsim); both controllers: --kube-api-qps %g --kube-api-burst %d; medians of %d runs\n\n",
		r.Limits.QPS, r.Limits.Burst, r.Repeats)

	// The memory check alone (no timed workload) has no table.
	if len(r.Results) > 0 {
		r.writeRuns(w)
	}
	r.writeRest(w)
}

// writeRuns prints one row per summarized workload and controller.
func (r *Report) writeRuns(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tcontroller\tinstances\tready s\treq/inst\treq/obj\tcreate\tupdate\tpatch\tdelete\tget\tlist\twatch\tof which events\treconc/inst\theap MiB\tRSS MiB\tCPU s ctl/apiserver+etcd/sim\t")
	for _, s := range r.Summary {
		if s.Storm != nil {
			continue
		}
		v := s.VerbsPerInstance
		heap, rec := "-", "-"
		if isOurs(s.Controller) {
			heap, rec = fmt.Sprintf("%.1f", s.HeapMiB), fmt.Sprintf("%.2f", s.ReconcilesPerInst)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%.1f\t%.1f / %.1f / %.1f\t\n",
			s.Workload, s.Controller, s.Instances, s.ReadySeconds, s.RequestsPerInst, s.RequestsPerObject,
			v["create"], v["update"], v["patch"], v["delete"], v["get"], v["list"], v["watch"], s.EventsPerInstance, rec, heap, s.RSSMiB,
			s.CPU.Controller, s.CPU.ControlPlane, s.CPU.Simulator)
	}
	_ = tw.Flush()
}

// writeRest prints everything after the table of runs.
func (r *Report) writeRest(w io.Writer) {
	r.writeLatency(w)
	r.writeFreshNamespaces(w)
	if len(r.Ratios) > 0 {
		fmt.Fprintln(w, "\nours / ReplicaSet (an instance is 3 objects: Exporter, config Secret, Pod; a ReplicaSet Pod is 1)")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "workload\ttime-to-ready\trequests/instance\trequests/object\trequests/object without events\t")
		for _, q := range r.Ratios {
			fmt.Fprintf(tw, "%s\t%.2f x\t%.2f x\t%.2f x\t%.2f x\t\n", q.Workload, q.Time, q.RequestsPerInst, q.RequestsPerObject, q.RequestsPerObjectNoEvents)
		}
		_ = tw.Flush()
	}
	for _, s := range r.Summary {
		if st := s.Storm; st != nil {
			fmt.Fprintf(w, "\nlease storm, %s: %d leases (%d clients, pool minAvailableReplicas %d, maxReplicas %d, ExitAndReplace) in %.2f s, %d instances created, %.2f requests/instance, %.2f reconciles/instance, heap %.1f MiB, RSS %.1f MiB\n",
				s.Controller, st.Leases, st.Workers, st.Warm, st.Max, st.Seconds, st.Created, s.RequestsPerInst, s.ReconcilesPerInst, s.HeapMiB, s.RSSMiB)
			fmt.Fprintf(w, "  release -> replacement available: p50 %.2f s, p95 %.2f s, p99 %.2f s (benchmark's view); controller histogram p50 %.2f s, p99 %.2f s (%g observations)\n",
				st.ReleaseP50, st.ReleaseP95, st.ReleaseP99, st.ControllerP50, st.ControllerP99, st.ControllerCount)
			fmt.Fprintf(w, "  lease create -> assigned: p50 %.2f s, p95 %.2f s, p99 %.2f s; refused (ended unassigned, all repeats): %d\n", st.LeaseWaitP50, st.LeaseWaitP95, st.LeaseWaitP99, st.Refused)
		}
	}
	if mm := r.Memory; mm != nil && mm.With != nil && mm.Without != nil {
		fmt.Fprintf(w, "\nmemory (controller watching all namespaces, 0 -> %d): RSS %.1f MiB without, %.1f MiB with %s (created in %.1f s): %.3f x (heap %.1f / %.1f MiB)\n",
			mm.Without.Instances, float64(mm.Without.RSSBytes)/(1<<20), float64(mm.With.RSSBytes)/(1<<20), mm.Created, mm.JunkSeconds, mm.RSSRatio,
			mm.Without.HeapBytes/(1<<20), mm.With.HeapBytes/(1<<20))
		if bm := mm.Baseline; bm != nil {
			fmt.Fprintf(w, "  %s: RSS %.1f MiB without, %.1f MiB with them: %.3f x (heap %.1f / %.1f MiB)\n", Baseline,
				float64(bm.Without.RSSBytes)/(1<<20), float64(bm.With.RSSBytes)/(1<<20), bm.RSSRatio, bm.Without.HeapBytes/(1<<20), bm.With.HeapBytes/(1<<20))
		}
		if rs := mm.ReplicaSet; rs != nil {
			line := fmt.Sprintf("  ReplicaSet controller, same scale-up with them: RSS %.1f MiB (peak %.1f MiB); ours / ReplicaSet %.3f x",
				float64(rs.RSSBytes)/(1<<20), float64(rs.PeakRSSBytes)/(1<<20), mm.RSSRatioToReplicaSet)
			if bm := mm.Baseline; bm != nil {
				line += fmt.Sprintf(", %s / ReplicaSet %.3f x", Baseline, bm.RSSRatioToReplicaSet)
			}
			fmt.Fprintln(w, line)
		}
	}
	if d := r.DefaultLimits; d != nil {
		line := fmt.Sprintf("\n%s: ready in %.2f s (one run)", d.Workload, d.ReadySeconds)
		for _, s := range r.Summary {
			if s.Controller == Ours && strings.HasPrefix(d.Workload, s.Workload+" ") {
				line += fmt.Sprintf(", against %.2f s with --kube-api-qps %g --kube-api-burst %d", s.ReadySeconds, r.Limits.QPS, r.Limits.Burst)
			}
		}
		fmt.Fprintln(w, line)
	}
	if len(r.Targets) > 0 {
		fmt.Fprintln(w, "\ntargets")
		for _, t := range r.Targets {
			mark := "MET    "
			if !t.Met {
				mark = "NOT MET"
			}
			fmt.Fprintf(w, "  %s  %-62s %s\n", mark, t.Name, t.Value)
		}
	}
	if len(r.APIServerRequests) > 0 {
		var parts []string
		for _, v := range append(verbs, "deletecollection") {
			if n := r.APIServerRequests[strings.ToUpper(v)]; n > 0 {
				parts = append(parts, fmt.Sprintf("%s %g", v, n))
			}
		}
		fmt.Fprintf(w, "\napiserver_request_total over the run, all clients (simulator and benchmark too): %s\n", strings.Join(parts, ", "))
	}
}
