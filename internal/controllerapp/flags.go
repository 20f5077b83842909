// Package controllerapp is the ExporterSet controller's process: its flags and the manager
// that runs the reconciler. The production command (cmd/exporterset-controller) and the local
// one (cmd/exporterset-dev) both run it. It holds production code only: no envtest, no
// simulator, since it is linked into the shipped binary (hack/check-prod-deps.sh checks).
package controllerapp

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// ErrHelp is returned when --help was asked for; the usage is already printed.
var ErrHelp = flag.ErrHelp

// UsageError is a bad command line: one clear line, exit code 2.
type UsageError struct{ Err error }

// Error is the cause's message.
func (u UsageError) Error() string { return u.Err.Error() }

// Unwrap gives errors.Is and errors.As the cause.
func (u UsageError) Unwrap() error { return u.Err }

// ExitCode is the process exit code for err: 0 after --help, 2 for a bad command line, else 1.
func ExitCode(err error) int {
	var u UsageError
	if errors.Is(err, ErrHelp) {
		return 0
	}
	if errors.As(err, &u) {
		return 2
	}
	return 1
}

// Exit prints err as "<program>: <err>" (nothing after --help) and exits with ExitCode.
func Exit(program string, err error) {
	if !errors.Is(err, ErrHelp) {
		fmt.Fprintf(os.Stderr, "%s: %v\n", program, err)
	}
	os.Exit(ExitCode(err))
}

// stringList is a repeatable flag; it also accepts comma-separated values.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

func (s *stringList) Set(v string) error {
	for _, part := range strings.Split(v, ",") {
		if part = strings.TrimSpace(part); part != "" {
			*s = append(*s, part)
		}
	}
	return nil
}

// Flags are the flags of the controller proper, shared by the production and the local command.
type Flags struct {
	kubeconfig       string
	metricsAddr      string
	probeAddr        string
	pprofAddr        string
	leaderElect      bool
	leaderElectionID string
	leaderElectionNS string
	leaseDuration    time.Duration
	renewDeadline    time.Duration
	retryPeriod      time.Duration
	namespaces       stringList
	provisioners     stringList
	pluginDir        string
	pluginChecksums  string
	exporterImage    string
	runtimeImage     string
	qps              float64
	burst            int
	maxConcurrent    int
	gracefulShutdown time.Duration
	inCluster        bool // Register was asked for the in-cluster flags: NAMESPACE applies
	// Zap holds the logging flags; callers build the logger from it.
	Zap zap.Options
}

// Register adds the flags to fs. inCluster adds those that only make sense against a real
// cluster (kubeconfig, leader election, namespaces); the local command supplies its own.
func (f *Flags) Register(fs *flag.FlagSet, inCluster bool) {
	f.inCluster = inCluster
	if inCluster {
		fs.StringVar(&f.kubeconfig, "kubeconfig", "", "Path to a kubeconfig. Default: $KUBECONFIG, then the in-cluster config, then ~/.kube/config.")
		fs.BoolVar(&f.leaderElect, "leader-elect", false, "Elect leaders on coordination.k8s.io Leases: one per namespace and served provisioner, named exporter-set-controller-<provisioner> and kept in the namespace of the sets it guards, as upstream's exporter-set controller names and keeps its own. A set is reconciled only while this process holds its provisioner's Lease in its namespace, so neither another replica nor upstream's controller ever works on the same pool.")
		fs.StringVar(&f.leaderElectionID, "leader-election-id", "", "Name of the set-wide Lease, in each namespace, that guards the sets without a served provisioner (class missing, or a provisioner reported unknown). Default: "+DefaultElectionID+".")
		fs.StringVar(&f.leaderElectionNS, "leader-election-namespace", "", "Ignored (kept so that old command lines still start): every Lease lives in the namespace of the sets it guards.")
		fs.DurationVar(&f.leaseDuration, "leader-elect-lease-duration", 15*time.Second, "How long a leader's Lease is valid; a standby takes over within it after the leader dies.")
		fs.DurationVar(&f.renewDeadline, "leader-elect-renew-deadline", 10*time.Second, "How long the leader keeps trying to renew before it gives up leadership.")
		fs.DurationVar(&f.retryPeriod, "leader-elect-retry-period", 2*time.Second, "How often candidates try to acquire or renew leadership.")
		fs.Var(&f.namespaces, "namespace", "Watch only this namespace (repeatable or comma-separated). Default: $NAMESPACE when set (as upstream's Jumpstarter operator sets it), else all namespaces.")
	}
	fs.StringVar(&f.metricsAddr, "metrics-bind-address", ":8080", `Address of the Prometheus metrics endpoint; "0" disables it.`)
	fs.StringVar(&f.probeAddr, "health-probe-bind-address", ":8081", `Address of /healthz and /readyz; "0" disables them.`)
	fs.StringVar(&f.pprofAddr, "pprof-bind-address", "", `Address of Go's /debug/pprof profiles, to look into CPU and memory use; empty or "0" disables it.`)
	fs.Var(&f.provisioners, "provisioner", "Serve only this provisioner name (repeatable). Default: every built-in and plugin provisioner found. With it, sets of other provisioners are left alone for another controller; without it, they get a ProvisionerUnknown condition.")
	fs.StringVar(&f.pluginDir, "plugin-dir", "", "Directory of provisioner plugins: executables named exporterset-provisioner-<name>.")
	fs.StringVar(&f.pluginChecksums, "plugin-checksums", "", "File of SHA-256 sums (sha256sum format) that plugin binaries must match; a plugin not listed is refused.")
	fs.StringVar(&f.exporterImage, "exporter-image", "", "Default exporter image of the built-in QEMU provisioner (classes and sets may override).")
	fs.StringVar(&f.runtimeImage, "runtime-image", "", "Default runtime image of the built-in QEMU provisioner (classes and sets may override).")
	fs.Float64Var(&f.qps, "kube-api-qps", 500, "Client-side limit of requests per second to the API server (high enough that the limiter is not the bottleneck of a 500-instance scale-up).")
	fs.IntVar(&f.burst, "kube-api-burst", 1000, "Client-side burst of requests to the API server.")
	fs.IntVar(&f.maxConcurrent, "max-concurrent-reconciles", 4, "How many ExporterSets are reconciled at once.")
	fs.DurationVar(&f.gracefulShutdown, "graceful-shutdown-timeout", 20*time.Second, "How long running reconciles get to finish on SIGTERM; keep it under the Pod's termination grace period.")
	f.Zap.Development = false
	f.Zap.BindFlags(fs)
}

// Kubeconfig is the --kubeconfig flag ("" when unset or not registered).
func (f *Flags) Kubeconfig() string { return f.kubeconfig }

// Parse parses args into fs; bad flags are one line and exit code 2, --help prints the flags
// under "Usage of <fs.Name()>" (so name the set after the command line) and returns ErrHelp.
func Parse(fs *flag.FlagSet, args []string) error {
	// flag would print the whole usage after a bad flag; one line says more.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stdout)
			fmt.Fprintf(os.Stdout, "Usage of %s:\n", fs.Name())
			fs.PrintDefaults()
			return ErrHelp
		}
		return UsageError{Err: fmt.Errorf("%v (see --help)", err)}
	}
	if fs.NArg() > 0 {
		return UsageError{Err: fmt.Errorf("unexpected argument %q (flags start with --)", fs.Arg(0))}
	}
	return nil
}
