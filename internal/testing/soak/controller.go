package soak

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/internal/tuning"
	"github.com/exporterset/exporterset/provisioner"
)

// registrationGrace is how long the soak's reconciler lets a running exporter go
// unregistered before it reports NotRegistering: above the slow-start action's delays.
const registrationGrace = 5 * time.Second

// inventoryInterval is how often the soak's reconciler sweeps the external pool's remote
// side for resources no instance records (instead of every minute).
const inventoryInterval = 3 * time.Second

// controller runs the reconciler under test in a manager of its own, which the walk stops
// and replaces: a restart loses everything in memory (expectations, describe cache), so
// only what the reconciler keeps in the API server (instance sequence, cooldown clock)
// carries over. The reconciler's clients go through the injected faults; its manager's cache
// does not.
type controller struct {
	cfg      *rest.Config
	scheme   *runtime.Scheme
	ns       string
	registry *provisioner.Registry
	faults   *Faults
	// onStart, if set, is called after every start: a new manager has no memory of the
	// failure backoff.
	onStart func()

	mu      sync.Mutex
	cancel  context.CancelFunc
	done    chan error
	starts  int
	lastErr error
}

func newController(cfg *rest.Config, scheme *runtime.Scheme, ns string, registry *provisioner.Registry, faults *Faults) *controller {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "soak-controller"
	return &controller{cfg: cfg, scheme: scheme, ns: ns, registry: registry, faults: faults}
}

// start starts a new manager and returns once its caches are synced.
func (c *controller) start(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel != nil {
		return errors.New("soak: controller already running")
	}
	mgr, err := ctrl.NewManager(c.cfg, ctrl.Options{
		Scheme:                  c.scheme,
		Cache:                   exporterset.CacheOptions(c.ns),
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		GracefulShutdownTimeout: ptr.To(10 * time.Second),
		// Every restart registers a controller of the same name in this process.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return fmt.Errorf("soak: creating manager: %w", err)
	}
	r := exporterset.NewReconciler(c.faults.Client(mgr.GetClient()), c.faults.Reader(mgr.GetAPIReader()), c.registry,
		exporterset.WithTuning(tuning.Knobs{
			RetryInterval: time.Second,
			BackoffBase:   soakBackoffBase, BackoffLimit: soakBackoffCap,
			// Short, so that the not-registering fault shows as NotRegistering within a walk.
			RegistrationGrace: registrationGrace,
			// Resources left behind on the external pool's remote side are swept within seconds.
			InventoryInterval: inventoryInterval,
		}),
		// The soak's CapacityBudget governs three of its sets (budget.go); the CRD is installed.
		exporterset.WithCapacityBudgets())
	if err := r.SetupWithManager(mgr); err != nil {
		return fmt.Errorf("soak: setting up reconciler: %w", err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	if !mgr.GetCache().WaitForCacheSync(runCtx) {
		cancel()
		return fmt.Errorf("soak: manager caches did not sync: %w", <-done)
	}
	c.cancel, c.done = cancel, done
	c.starts++
	if c.onStart != nil {
		c.onStart()
	}
	return nil
}

// stop stops the running manager, if any, and waits for it.
func (c *controller) stop() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cancel == nil {
		return nil
	}
	c.cancel()
	err := <-c.done
	c.cancel, c.done = nil, nil
	if err != nil {
		c.lastErr = err
	}
	return err
}

func (c *controller) running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cancel != nil
}

// restarts is how many managers were started after the first.
func (c *controller) restarts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return max(0, c.starts-1)
}
