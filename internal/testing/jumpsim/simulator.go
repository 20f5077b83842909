package jumpsim

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/exporterset/exporterset/internal/testing/testenv"
)

// Simulator plays the Jumpstarter core controller, a kubelet and the garbage collector
// against an apiserver. It has its own manager and informer cache, shared with nothing, so
// the controller under test can be stopped and restarted around it.
type Simulator struct {
	opts   options
	log    logr.Logger
	scheme *runtime.Scheme
	mgr    manager.Manager
	// client reads from the Simulator's cache and writes to the apiserver.
	client client.Client
	// reader reads from the apiserver: used to confirm what the cache says before an
	// irreversible step (ending a lease as unsatisfiable, deleting an orphan).
	reader client.Reader
	// direct is an uncached client for hooks and test helpers, which must see the newest state.
	direct client.Client
	events *eventLog

	presence *presenceState
	faults   *faultState
	node     *simNode
	creds    *credentialState
	sched    *scheduler
	kube     *kubelet
	ends     leaseEnds
	hooks    *hookState

	exporterPokes chan event.GenericEvent
	leasePokes    chan event.GenericEvent
	podPokes      chan event.GenericEvent

	mu      sync.Mutex
	started bool
	cancel  context.CancelFunc
	done    chan struct{}
	runErr  error
}

// New builds a Simulator talking to the apiserver at cfg. It does not start it.
func New(cfg *rest.Config, opts ...Option) (*Simulator, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		// The client-go default (5 QPS) would throttle a simulated cluster of 500 Exporters.
		cfg.QPS, cfg.Burst = 500, 1000
	}
	cfg.UserAgent = "jumpsim"
	scheme := testenv.NewScheme()

	cacheOpts := cache.Options{Scheme: scheme}
	if len(o.namespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range o.namespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	mgr, err := manager.New(cfg, manager.Options{
		Scheme:                  scheme,
		MapperProvider:          newCachedMapper,
		Cache:                   cacheOpts,
		Logger:                  o.logger,
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
		LeaderElection:          false,
		GracefulShutdownTimeout: ptr.To(10 * time.Second),
		Controller: config.Controller{
			// Several Simulators may live in one test binary; controller names repeat.
			SkipNameValidation:      ptr.To(true),
			MaxConcurrentReconciles: o.workers,
			RecoverPanic:            ptr.To(true),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("jumpsim: creating manager: %w", err)
	}
	direct, err := client.New(cfg, client.Options{Scheme: scheme, Mapper: mgr.GetRESTMapper()})
	if err != nil {
		return nil, fmt.Errorf("jumpsim: creating client: %w", err)
	}
	s := &Simulator{
		opts:          o,
		log:           o.logger.WithName("jumpsim"),
		scheme:        scheme,
		mgr:           mgr,
		client:        mgr.GetClient(),
		reader:        mgr.GetAPIReader(),
		direct:        direct,
		events:        newEventLog(o.eventLimit),
		presence:      newPresenceState(),
		ends:          leaseEnds{told: map[string]bool{}},
		hooks:         newHookState(),
		faults:        newFaultState(o),
		node:          newSimNode(o),
		creds:         &credentialState{seen: newSightings()},
		exporterPokes: make(chan event.GenericEvent, 1024),
		leasePokes:    make(chan event.GenericEvent, 1024),
		podPokes:      make(chan event.GenericEvent, 1024),
		done:          make(chan struct{}),
	}
	s.sched = newScheduler(s)
	s.kube = &kubelet{s: s, handled: map[string]bool{}, seen: newSightings(), dying: newSightings(), containers: map[types.UID]map[string]*containerMemory{}}

	ctx := context.Background()
	var gcKinds []client.Object
	if o.gc {
		gcKinds = s.gcKinds()
	}
	if err := s.addIndexes(ctx, gcKinds); err != nil {
		return nil, fmt.Errorf("jumpsim: adding cache indexes: %w", err)
	}
	if o.controller {
		if err := s.setupExporterController(); err != nil {
			return nil, err
		}
		if err := s.setupScheduler(); err != nil {
			return nil, err
		}
	}
	if o.kubelet {
		if err := s.setupKubelet(); err != nil {
			return nil, err
		}
	}
	if o.gc {
		if err := s.setupGarbageCollector(gcKinds); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// NewKubelet builds a Simulator that runs only the simulated kubelet (no Jumpstarter
// controller, no garbage collector): for tests that drive Exporter status themselves.
func NewKubelet(cfg *rest.Config, opts ...Option) (*Simulator, error) {
	return New(cfg, append(opts, WithoutController(), WithoutGarbageCollector())...)
}

// Start runs the Simulator in the background and returns once its caches are synced, so
// objects created afterwards are acted on. It fails if the manager cannot start (for
// example when the Exporter or Lease CRDs are missing). A Simulator starts once.
func (s *Simulator) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("jumpsim: Simulator already started")
	}
	s.started = true
	runCtx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	s.mu.Unlock()

	go func() {
		defer close(s.done)
		if err := s.mgr.Start(runCtx); err != nil {
			s.runErr = err
		}
	}()
	synced := make(chan bool, 1)
	go func() { synced <- s.mgr.GetCache().WaitForCacheSync(runCtx) }()
	select {
	case ok := <-synced:
		if ok {
			if s.opts.kubelet {
				// Best effort: the scheduler works from its own node state.
				_ = s.publishNode(ctx)
			}
			return nil
		}
		_ = s.Stop()
		return errors.New("jumpsim: caches did not sync")
	case <-s.done:
		cancel()
		if s.runErr != nil {
			return fmt.Errorf("jumpsim: manager stopped: %w", s.runErr)
		}
		return errors.New("jumpsim: manager stopped before its caches synced")
	}
}

// Stop stops the Simulator and waits until its controllers returned. It is safe to call more
// than once, and on a Simulator that never started.
func (s *Simulator) Stop() error {
	s.mu.Lock()
	cancel, started := s.cancel, s.started
	s.mu.Unlock()
	if !started {
		return nil
	}
	cancel()
	<-s.done
	return s.runErr
}

// Client returns an uncached client with the Simulator's scheme, for tests.
func (s *Simulator) Client() client.Client { return s.direct }

// poke enqueues obj in the controller fed by ch; it blocks only while the channel is full.
func (s *Simulator) poke(ctx context.Context, ch chan event.GenericEvent, obj client.Object) {
	select {
	case ch <- event.GenericEvent{Object: obj}:
	case <-ctx.Done():
	case <-s.done:
	}
}

func typeName(obj any) string { return reflect.TypeOf(obj).Elem().Name() }
