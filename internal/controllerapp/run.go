package controllerapp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/plugin/host"
	"github.com/exporterset/exporterset/provisioners/baremetal"
	"github.com/exporterset/exporterset/provisioners/qemu"
)

// RestConfig finds the cluster: kubeconfig (the --kubeconfig flag) if set, else KUBECONFIG,
// else in-cluster, else ~/.kube/config (controller-runtime's order after the flag).
func RestConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("reading --kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("no cluster to talk to (set --kubeconfig or KUBECONFIG, or run in a cluster): %w", err)
	}
	return cfg, nil
}

// NewScheme knows the built-in types, ExporterSet/VirtualTargetClass and Jumpstarter's
// Exporter/Lease: everything the controller reads or writes.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, vtv1alpha1.AddToScheme, jumpstarterv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // only a broken scheme builder gets here
		}
	}
	return s
}

// buildRegistry registers the built-in provisioners and the plugins of --plugin-dir, then
// restricts the registry to --provisioner. Every error is a bad configuration.
func buildRegistry(ctx context.Context, f *Flags, version string) (*provisioner.Registry, *host.Host, error) {
	reg := provisioner.NewRegistry()
	var qopts []qemu.Option
	if f.exporterImage != "" || f.runtimeImage != "" {
		images := qemu.DefaultImages()
		if f.exporterImage != "" {
			images.Exporter.Image = f.exporterImage
		}
		if f.runtimeImage != "" {
			images.Runtime.Image = f.runtimeImage
		}
		qopts = append(qopts, qemu.WithDefaultImages(images))
	}
	qopts = append(qopts, qemu.WithVersion(version))
	if err := reg.Register(qemu.Name, "built-in", qemu.New(qopts...)); err != nil {
		return nil, nil, err
	}
	// Lab hosts over SSH: hosted units, with no Pod (docs/provisioner-baremetal.md).
	if err := reg.Register(baremetal.ProvisionerName, "built-in", baremetal.New()); err != nil {
		return nil, nil, err
	}
	var plugins *host.Host
	if f.pluginDir != "" || os.Getenv("EXPORTERSET_REATTACH_PROVISIONERS") != "" {
		if f.pluginDir != "" {
			st, err := os.Stat(f.pluginDir)
			if err != nil {
				return nil, nil, UsageError{Err: fmt.Errorf("--plugin-dir: %w", err)}
			}
			if !st.IsDir() {
				return nil, nil, UsageError{Err: fmt.Errorf("--plugin-dir %s is not a directory", f.pluginDir)}
			}
		}
		opts := host.Options{Logger: ctrl.Log.WithName("plugins")}
		if f.pluginChecksums != "" {
			b, err := os.ReadFile(f.pluginChecksums)
			if err != nil {
				return nil, nil, UsageError{Err: fmt.Errorf("--plugin-checksums: %w", err)}
			}
			if opts.Checksums, err = host.ParseSHA256Sums(b); err != nil {
				return nil, nil, UsageError{Err: fmt.Errorf("--plugin-checksums %s: %w", f.pluginChecksums, err)}
			}
		}
		var err error
		plugins, err = host.Discover(ctx, f.pluginDir, reg, opts)
		if err != nil {
			if plugins != nil {
				_ = plugins.Close()
			}
			return nil, nil, fmt.Errorf("loading plugins: %w", err)
		}
	}
	if err := reg.Restrict(f.provisioners); err != nil {
		if plugins != nil {
			_ = plugins.Close()
		}
		return nil, nil, UsageError{Err: fmt.Errorf("--provisioner: %w", err)}
	}
	return reg, plugins, nil
}

// Run runs the manager with the reconciler against cfg until ctx ends. version is the
// binary's, logged and given to the built-in provisioners (they label what they render).
func Run(ctx context.Context, cfg *rest.Config, f *Flags, version string) error {
	log := ctrl.Log.WithName("setup")
	if f.qps > 0 {
		cfg = rest.CopyConfig(cfg)
		cfg.QPS, cfg.Burst = float32(f.qps), f.burst
	}
	reg, plugins, err := buildRegistry(ctx, f, version)
	if err != nil {
		return err
	}
	if plugins != nil {
		defer func() { _ = plugins.Close() }()
	}

	namespaces := f.watchNamespaces()
	for _, ns := range namespaces {
		if errs := validateNamespace(ns); errs != "" {
			if len(f.namespaces) == 0 {
				return UsageError{Err: fmt.Errorf("%s=%q: %s", envNamespace, ns, errs)}
			}
			return UsageError{Err: fmt.Errorf("--namespace %q: %s", ns, errs)}
		}
	}
	// With leader election, one Lease per namespace and provisioner, named as upstream's
	// controller names its own (election.go), whether or not --provisioner is given: beside
	// upstream's operator, a pool its controller serves is never acted on by this one.
	var locks *provisionerLocks
	if f.leaderElect {
		setWide := f.leaderElectionID
		if setWide == "" {
			setWide = DefaultElectionID
		}
		if locks, err = newProvisionerLocks(cfg, reg.Names(), setWide, f, ctrl.Log.WithName("leader-election")); err != nil {
			return err
		}
		if f.leaderElectionNS != "" {
			log.Info("--leader-election-namespace is ignored: each Lease lives in the namespace of the sets it guards", "given", f.leaderElectionNS)
		}
	}
	grace := f.gracefulShutdown
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  NewScheme(),
		Cache:                   exporterset.CacheOptions(namespaces...),
		Metrics:                 metricsserver.Options{BindAddress: f.metricsAddr},
		HealthProbeBindAddress:  f.probeAddr,
		PprofBindAddress:        f.pprofAddr,
		GracefulShutdownTimeout: &grace,
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	if plugins != nil {
		if err := mgr.Add(plugins); err != nil {
			return err
		}
	}
	opts := []exporterset.Option{
		// core/v1 events: upstream's operator grants no events.k8s.io (events.go).
		exporterset.WithRecorder(coreEvents{mgr.GetEventRecorderFor("exporterset-controller")}), //nolint:staticcheck // see coreEvents
		exporterset.WithMetrics(metrics.Registry),
		exporterset.WithMaxConcurrentReconciles(f.maxConcurrent),
	}
	if len(f.provisioners) == 0 {
		opts = append(opts, exporterset.WithClaimUnknownProvisioners())
	}
	if locks != nil {
		opts = append(opts, exporterset.WithProvisionerGate(locks.Held))
	}
	// Upstream's ExporterSet CRD (where its operator installed it) prunes status fields of
	// ours: say so once at start, in the log and on the first set acted on.
	if missing, err := prunedFields(cfg); err != nil {
		log.V(1).Info("could not read the served ExporterSet schema; not checking whether it is upstream's", "error", err.Error())
	} else if len(missing) > 0 {
		note := upstreamCRDNote(missing)
		log.Info(note, "prunedStatusFields", missing)
		opts = append(opts, exporterset.WithStartupNotice(exporterset.EventUpstreamCRD, note))
	}
	if ok, why := budgetsUsable(ctx, mgr.GetRESTMapper(), mgr.GetClient(), namespaces); ok {
		opts = append(opts, exporterset.WithCapacityBudgets())
	} else {
		log.Info("CapacityBudgets are not honoured: "+why, "docs", "docs/budget.md")
	}
	r := exporterset.NewReconciler(mgr.GetClient(), mgr.GetAPIReader(), reg, opts...)
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the reconciler: %w", err)
	}
	if locks != nil {
		locks.OnOpened(func(namespace string) {
			if err := r.GateOpened(ctx, namespace); err != nil {
				log.Error(err, "could not list the sets of a namespace whose lock was acquired; they are looked at on the gate's retry", "namespace", namespace)
			}
		})
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("caches", cacheSynced(mgr)); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("provisioners", provisionersHealthy(reg)); err != nil {
		return err
	}
	log.Info("starting", "version", version, "provisioners", reg.Names(), "namespaces", namespaces, "leaderElection", f.leaderElect, "kubeAPIQPS", cfg.QPS, "kubeAPIBurst", cfg.Burst)
	if err := startManager(ctx, mgr, locks); err != nil {
		return err
	}
	log.Info("stopped")
	return nil
}

// startManager runs mgr until ctx ends, with the provisioners' locks (if any) campaigning
// beside it: a lost lock stops the manager and is the error; the locks are released only
// once the manager has stopped, so no reconcile runs after another process may take over.
func startManager(ctx context.Context, mgr manager.Manager, locks *provisionerLocks) error {
	mgrCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	if locks != nil {
		lockCtx, release := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			if err := locks.Run(lockCtx, stop); err != nil {
				stop(err)
			}
		}()
		defer func() { release(); <-done }()
	}
	err := mgr.Start(mgrCtx)
	if cause := context.Cause(mgrCtx); ctx.Err() == nil && cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	return nil
}

// cacheSynced is ready once the manager's informers have synced.
func cacheSynced(mgr manager.Manager) healthz.Checker {
	return func(req *http.Request) error {
		ctx, cancel := context.WithTimeout(req.Context(), time.Second)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(ctx) {
			return errors.New("caches not synced")
		}
		return nil
	}
}

// provisionersHealthy is ready when every provisioner answers Describe: a crashed plugin
// that cannot be restarted makes the controller unready, not silently useless.
func provisionersHealthy(reg *provisioner.Registry) healthz.Checker {
	return func(req *http.Request) error {
		for _, name := range reg.Names() {
			p, _ := reg.Get(name)
			ctx, cancel := context.WithTimeout(req.Context(), 5*time.Second)
			_, err := p.Describe(ctx)
			cancel()
			if err != nil {
				return fmt.Errorf("provisioner %s: %w", name, err)
			}
		}
		return nil
	}
}

func validateNamespace(ns string) string {
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		return msgs[0]
	}
	return ""
}
