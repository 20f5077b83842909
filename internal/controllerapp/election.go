package controllerapp

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// ProvisionerElectionID is the leader election Lease of one provisioner's controller, named
// as upstream's exporter-set controller names it (contract §2b): while a replica of either
// image holds it, no other reconciles that provisioner's sets.
func ProvisionerElectionID(provisioner string) string {
	return "exporter-set-controller-" + provisioner
}

// DefaultElectionID is the one Lease of a process serving every provisioner it finds.
const DefaultElectionID = "exporterset.virtualtarget.jumpstarter.dev"

// provisionerLocks elects one leader per provisioner, each on its own coordination.k8s.io
// Lease (the kind controller-runtime uses by default, as upstream does). The reconciler asks
// held (exporterset.WithProvisionerGate) before it acts on a set, so a process serving
// several provisioners works on each one's sets only while it holds that one's lock. It
// runs beside the manager, not in it: the locks are released only after the manager has
// stopped every reconcile. Losing a held lock stops the process, as controller-runtime does.
type provisionerLocks struct {
	client    coordinationv1client.CoordinationV1Interface
	namespace string
	identity  string
	names     []string
	lease     time.Duration
	renew     time.Duration
	retry     time.Duration
	log       logr.Logger

	mu   sync.Mutex
	held map[string]bool
}

func newProvisionerLocks(cfg *rest.Config, namespace string, names []string, f *Flags, log logr.Logger) (*provisionerLocks, error) {
	c, err := coordinationv1client.NewForConfig(rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election"))
	if err != nil {
		return nil, err
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	return &provisionerLocks{
		client: c, namespace: namespace, identity: host + "_" + string(uuid.NewUUID()), names: names,
		lease: f.leaseDuration, renew: f.renewDeadline, retry: f.retryPeriod, log: log, held: map[string]bool{},
	}, nil
}

// Held is the reconciler's gate: whether this process holds provisioner's lock now. For ""
// (a set without its class) it is true only while every lock is held.
func (l *provisionerLocks) Held(provisioner string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if provisioner == "" {
		for _, n := range l.names {
			if !l.held[n] {
				return false
			}
		}
		return len(l.names) > 0
	}
	return l.held[provisioner]
}

func (l *provisionerLocks) set(name string, held bool) (was bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	was = l.held[name]
	l.held[name] = held
	return was
}

// Run campaigns for every lock until ctx ends, then releases the held ones before it
// returns. lost is called (once per lock) when a held lock is lost while ctx is live.
func (l *provisionerLocks) Run(ctx context.Context, lost func(error)) error {
	var electors []*leaderelection.LeaderElector
	for _, name := range l.names {
		id := ProvisionerElectionID(name)
		lock := &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: l.namespace, Name: id},
			Client:     l.client,
			LockConfig: resourcelock.ResourceLockConfig{Identity: l.identity},
		}
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: lock, Name: id, ReleaseOnCancel: true,
			LeaseDuration: l.lease, RenewDeadline: l.renew, RetryPeriod: l.retry,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) {
					l.set(name, true)
					l.log.Info("acquired the provisioner's lock; reconciling its sets", "provisioner", name, "lease", l.namespace+"/"+id)
				},
				OnStoppedLeading: func() {
					if was := l.set(name, false); was && ctx.Err() == nil {
						lost(fmt.Errorf("lost the leader election lock %s/%s of provisioner %s", l.namespace, id, name))
					}
				},
			},
		})
		if err != nil {
			return fmt.Errorf("leader election for provisioner %s: %w", name, err)
		}
		electors = append(electors, le)
	}
	l.log.Info("waiting for the provisioners' locks", "leases", l.namespace, "provisioners", l.names, "identity", l.identity)
	var wg sync.WaitGroup
	for _, le := range electors {
		wg.Add(1)
		go func() {
			defer wg.Done()
			le.Run(ctx) // returns when ctx ends (releasing the lock) or the lock is lost
		}()
	}
	wg.Wait()
	return nil
}
