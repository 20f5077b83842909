package controllerapp

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/exporterset/exporterset/exporterset"
)

// ProvisionerElectionID is the leader election Lease of one provisioner's controller, named
// as upstream's exporter-set controller names it (contract §2b): while a replica of either
// image holds it, no other reconciles that provisioner's sets in the Lease's namespace.
func ProvisionerElectionID(provisioner string) string {
	return "exporter-set-controller-" + provisioner
}

// DefaultElectionID is the default name of the set-wide Lease: the lock on the sets that
// have no served provisioner (class missing, or a provisioner reported as unknown).
const DefaultElectionID = "exporterset.virtualtarget.jumpstarter.dev"

// lockKey is one lock: a Lease name in the namespace of the sets it guards.
type lockKey struct{ namespace, lease string }

// provisionerLocks elects one leader per (namespace, provisioner), each on its own
// coordination.k8s.io Lease (the kind controller-runtime uses by default, as upstream does)
// named ProvisionerElectionID and kept in the namespace of the sets it guards. Upstream's
// exporter-set controller holds exactly that Lease in the one namespace it serves, so while
// it runs there this process leaves that namespace's pools of that provisioner alone, wherever
// this process itself was installed. The reconciler asks Held (exporterset.WithProvisionerGate)
// before it acts on a set; the first ask about a namespace and provisioner starts the campaign
// for its Lease, so the locks follow the namespaces that hold sets. Sets without a served
// provisioner share one set-wide Lease per namespace. The locks run beside the manager, not
// in it: they are released only after the manager has stopped every reconcile. Losing a held
// lock stops the process, as controller-runtime does, unless its namespace took the Lease
// with it on deletion (election_ending.go).
type provisionerLocks struct {
	client   coordinationv1client.CoordinationV1Interface
	identity string
	served   map[string]bool // provisioners with a Lease of their own
	setWide  string          // the Lease of sets without a served provisioner
	lease    time.Duration
	renew    time.Duration
	retry    time.Duration
	log      logr.Logger

	mu     sync.Mutex
	ctx    context.Context // Run's; nil before Run, campaigns start only within it
	closed bool            // Run is releasing: no new campaign
	lost   func(error)
	held   map[lockKey]bool       // every key campaigned for, and whether it is held now
	opened func(namespace string) // told when a lock is acquired (OnOpened); may be nil
	wg     sync.WaitGroup
}

func newProvisionerLocks(cfg *rest.Config, served []string, setWide string, f *Flags, log logr.Logger) (*provisionerLocks, error) {
	c, err := coordinationv1client.NewForConfig(rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election"))
	if err != nil {
		return nil, err
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	l := &provisionerLocks{
		client: c, identity: host + "_" + string(uuid.NewUUID()), served: map[string]bool{}, setWide: setWide,
		lease: f.leaseDuration, renew: f.renewDeadline, retry: f.retryPeriod, log: log, held: map[lockKey]bool{},
	}
	for _, n := range served {
		l.served[n] = true
	}
	return l, nil
}

// leaseName is the Lease guarding the sets of provisioner: its own for a served one, else
// the set-wide one ("" is a set whose class is missing).
func (l *provisionerLocks) leaseName(provisioner string) string {
	if l.served[provisioner] {
		return ProvisionerElectionID(provisioner)
	}
	return l.setWide
}

// Held is the reconciler's gate: whether this process holds the lock of provisioner's sets
// in namespace now. The first ask starts the campaign for it (and answers false).
func (l *provisionerLocks) Held(namespace, provisioner string) bool {
	k := lockKey{namespace: namespace, lease: l.leaseName(provisioner)}
	l.mu.Lock()
	defer l.mu.Unlock()
	held, known := l.held[k]
	if !known && l.ctx != nil && !l.closed {
		l.held[k] = false
		l.campaign(k)
	}
	return held
}

// OnOpened sets what is told the namespace of each lock acquired from now on: the
// reconciler's GateOpened, so that its sets there need not wait for the gate's retry.
func (l *provisionerLocks) OnOpened(f func(namespace string)) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.opened = f
}

func (l *provisionerLocks) openedFunc() func(string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.opened
}

func (l *provisionerLocks) isHeld(k lockKey) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[k]
}

func (l *provisionerLocks) set(k lockKey, held bool) (was bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	was = l.held[k]
	l.held[k] = held
	return was
}

// campaign runs the election for k until Run's context ends; l.mu is held.
func (l *provisionerLocks) campaign(k lockKey) {
	ctx, lost := l.ctx, l.lost
	what := "the provisioner's lock"
	if k.lease == l.setWide {
		what = "the set-wide lock"
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: k.namespace, Name: k.lease},
			Client:     l.client,
			LockConfig: resourcelock.ResourceLockConfig{Identity: l.identity},
		},
		Name: k.lease, ReleaseOnCancel: true,
		LeaseDuration: l.lease, RenewDeadline: l.renew, RetryPeriod: l.retry,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				l.set(k, true)
				l.log.Info("acquired "+what+"; reconciling its sets", "lease", k.namespace+"/"+k.lease, "namespace", k.namespace, exporterset.StepKey, "gate opened")
				if opened := l.openedFunc(); opened != nil {
					opened(k.namespace)
				}
			},
			OnStoppedLeading: func() {
				if was := l.isHeld(k); !was || ctx.Err() != nil || !l.outlive(ctx, k) {
					if l.set(k, false); was && ctx.Err() == nil {
						lost(fmt.Errorf("lost the leader election lock %s/%s", k.namespace, k.lease))
					}
				}
			},
		},
	})
	if err != nil {
		go lost(fmt.Errorf("leader election on %s/%s: %w", k.namespace, k.lease, err))
		return
	}
	l.log.Info("waiting for "+what, "lease", k.namespace+"/"+k.lease, "identity", l.identity)
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		le.Run(ctx) // returns when ctx ends (releasing the lock) or the lock is lost
	}()
}

// Run lets campaigns start until ctx ends, then waits for every campaign to release its lock.
// lost is called (once per lock) when a held lock is lost while ctx is live.
func (l *provisionerLocks) Run(ctx context.Context, lost func(error)) error {
	l.mu.Lock()
	l.ctx, l.lost = ctx, lost
	l.mu.Unlock()
	l.log.Info("waiting for the provisioners' locks: each namespace's Lease is campaigned for when a set there is first seen",
		"provisioners", keys(l.served), "setWideLease", l.setWide, "identity", l.identity)
	<-ctx.Done()
	l.mu.Lock()
	l.closed = true // no wg.Add after this, so Wait cannot race one
	l.mu.Unlock()
	l.wg.Wait()
	return nil
}

func keys(m map[string]bool) []string { return slices.Sorted(maps.Keys(m)) }
