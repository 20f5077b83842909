// Command bench-scale runs the scale benchmark of internal/testing/scalebench (`make bench-scale`):
// the exporterset-controller and, side by side, the Kubernetes ReplicaSet controller on one
// envtest API server with the simulated Jumpstarter core and kubelet. It prints a table and
// writes a JSON report.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/exporterset/exporterset/internal/testing/scalebench"
	"github.com/exporterset/exporterset/internal/testing/testenv"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "bench-scale: %v\n", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		cfg      scalebench.Config
		sizes    string
		out      string
		keep     bool
		multi    string
		timeout  time.Duration
		workRoot string
	)
	flag.StringVar(&cfg.ControllerBin, "controller-bin", "", "exporterset-controller binary (default: built from ./cmd/exporterset-controller into the work directory)")
	flag.StringVar(&cfg.KCMBin, "kube-controller-manager", "", "kube-controller-manager binary (default: the one beside kube-apiserver)")
	flag.Float64Var(&cfg.Limits.QPS, "kube-api-qps", 500, "--kube-api-qps of both controllers")
	flag.IntVar(&cfg.Limits.Burst, "kube-api-burst", 1000, "--kube-api-burst of both controllers")
	var defaultLimits int
	flag.IntVar(&defaultLimits, "default-limits-size", 300, "also scale one set 0 -> N with the controller binary's own rate-limit defaults (0 to skip)")
	flag.IntVar(&cfg.FreshNamespaces, "fresh-namespaces", 3, "sets of one instance, each created in a namespace the running controller (--leader-elect, default timings, all namespaces) never held a set in: set create -> first Exporter and first available (0 to skip)")
	flag.StringVar(&sizes, "sizes", "1,50,100,200,300,500", "single-set scale-ups 0 -> N, comma-separated (each also reports per-instance latency)")
	flag.StringVar(&multi, "multi", "100x5", "many-sets workload SETSxINSTANCES (empty to skip)")
	flag.IntVar(&cfg.StormLeases, "storm-leases", 200, "leases of the lease storm (0 to skip)")
	flag.IntVar(&cfg.StormWarm, "storm-warm", 0, "minAvailableReplicas of the storm's pool (0: one per client; more covers the storm)")
	flag.StringVar(&cfg.BaselineBin, "baseline-bin", "", "another exporterset-controller build, run as the contender "+scalebench.Baseline+" alternating with --controller-bin (a before/after comparison in one run); empty: not run")
	flag.IntVar(&cfg.StormClients, "storm-clients", 0, "clients of the lease storm, each holding one lease at a time (0: 10)")
	flag.IntVar(&cfg.StormMax, "storm-max", 0, "maxReplicas of the storm's pool (0: unbounded)")
	flag.StringVar(&cfg.UpstreamBin, "upstream-bin", "", "upstream's exporter-set-controller binary, run as a third contender on the same simulator (single-set scale-ups and the storm; it gets NAMESPACE and --provisioner qemu.jumpstarter.dev); empty: not run")
	flag.IntVar(&cfg.Junk, "junk", 20000, "unrelated Pods and Secrets of the memory check (the check is skipped when this and --junk-exporters are 0)")
	flag.IntVar(&cfg.JunkExporters, "junk-exporters", -1, "unrelated Exporters of the memory check (owned by no ExporterSet, no label of ours); -1: as many as --junk")
	flag.StringVar(&cfg.HeapProfileDir, "memory-heap-profiles", "", "directory to save a heap profile of each of our memory-check runs to (heap-<namespace>.pprof), taken before its RSS is read; empty: none")
	flag.IntVar(&cfg.Repeats, "repeats", 3, "runs of each timed workload; medians are reported")
	flag.IntVar(&cfg.SimWorkers, "sim-workers", 16, "concurrency of each simulated component")
	flag.DurationVar(&timeout, "timeout", 3*time.Minute, "bound of each wait")
	flag.StringVar(&out, "out", "bin/scalebench/latest.json", "JSON report")
	flag.StringVar(&workRoot, "work-dir", "", "parent of the work directory (kubeconfigs, audit log, controller logs; default: the system temp dir)")
	flag.BoolVar(&cfg.OursOnly, "ours-only", false, "run only the exporterset-controller (no kube-controller-manager needed): a quick look at our own figures")
	flag.BoolVar(&keep, "keep", false, "keep the work directory")
	flag.BoolVar(&cfg.AuditAll, "audit-all", false, "record every client's requests in the audit log of the work directory (with --keep, to look into a result)")
	flag.Func("ours-arg", "extra flag of every exporterset-controller run (repeatable), e.g. --ours-arg=--pprof-bind-address=127.0.0.1:6060", func(v string) error {
		cfg.OursArgs = append(cfg.OursArgs, v)
		return nil
	})
	var cpuProfile string
	flag.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the benchmark process (the simulator) to this file")
	flag.Parse()
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	cfg.MemoryPool = 100
	if cfg.JunkExporters < 0 {
		cfg.JunkExporters = cfg.Junk
	}
	cfg.DefaultLimitsSize = int32(defaultLimits)
	cfg.Timeout = timeout

	for _, s := range strings.Split(sizes, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.ParseInt(s, 10, 32)
		if err != nil || n <= 0 {
			return fmt.Errorf("--sizes: bad size %q", s)
		}
		cfg.Sizes = append(cfg.Sizes, int32(n))
	}
	if multi != "" {
		a, b, ok := strings.Cut(multi, "x")
		sets, err1 := strconv.Atoi(a)
		per, err2 := strconv.ParseInt(b, 10, 32)
		if !ok || err1 != nil || err2 != nil || sets <= 0 || per <= 0 {
			return fmt.Errorf("--multi: want SETSxINSTANCES, got %q", multi)
		}
		cfg.MultiSets, cfg.MultiPerSet = sets, int32(per)
	}
	if cfg.Repeats < 1 {
		return fmt.Errorf("--repeats must be at least 1")
	}

	dir, err := os.MkdirTemp(workRoot, "scalebench-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintf(os.Stderr, "bench-scale: work directory %s\n", dir)
	} else {
		defer func() { _ = os.RemoveAll(dir) }()
	}
	cfg.WorkDir = dir

	if cfg.Assets, err = testenv.AssetsDir(true); err != nil {
		return err
	}
	if cfg.KCMBin == "" {
		cfg.KCMBin = filepath.Join(cfg.Assets, "kube-controller-manager")
	}
	if _, err := os.Stat(cfg.KCMBin); err != nil && !cfg.OursOnly {
		return fmt.Errorf("kube-controller-manager: %w (build it with `make envtest-bins`)", err)
	}
	if cfg.BaselineBin != "" {
		if _, err := os.Stat(cfg.BaselineBin); err != nil {
			return fmt.Errorf("--baseline-bin: %w", err)
		}
	}
	if cfg.UpstreamBin != "" {
		if _, err := os.Stat(cfg.UpstreamBin); err != nil {
			return fmt.Errorf("--upstream-bin: %w", err)
		}
		if cfg.UpstreamBin, err = filepath.Abs(cfg.UpstreamBin); err != nil {
			return err
		}
	}
	if cfg.ControllerBin == "" {
		cfg.ControllerBin = filepath.Join(dir, "exporterset-controller")
		fmt.Fprintln(os.Stderr, "bench-scale: building ./cmd/exporterset-controller")
		root, err := testenv.RepoRoot()
		if err != nil {
			return err
		}
		build := exec.Command("go", "build", "-trimpath", "-o", cfg.ControllerBin, "./cmd/exporterset-controller")
		build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if err := build.Run(); err != nil {
			return fmt.Errorf("building the controller: %w", err)
		}
	}

	// controller-runtime (envtest, the simulator) logs nothing here: progress goes to stderr.
	ctrllog.SetLogger(zap.New(zap.WriteTo(io.Discard)))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := scalebench.Run(ctx, cfg)
	if err != nil {
		return err
	}
	rep.WriteTable(os.Stdout)
	if err := rep.WriteJSON(out); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "bench-scale: wrote %s\n", out)
	return nil
}
