package jumpsim

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// presenceState holds the test hooks' overrides of what the exporter processes report.
type presenceState struct {
	mu         sync.Mutex
	offline    map[types.NamespacedName]bool
	override   map[types.NamespacedName]statusOverride
	afterLease map[types.UID]time.Time
	// registerFail is why each exporter whose Pod runs cannot register, for
	// NotRegisteringReason.
	registerFail map[types.NamespacedName]string
	// running remembers when presence first saw a Pod Running, for the registration delay.
	running *sightings
	// outside are the Exporters whose process runs outside the cluster (boards.go).
	outside map[types.NamespacedName]bool
}

type statusOverride struct {
	value   jsv1.ExporterStatusValue
	message string
}

func newPresenceState() *presenceState {
	return &presenceState{
		offline:      map[types.NamespacedName]bool{},
		override:     map[types.NamespacedName]statusOverride{},
		afterLease:   map[types.UID]time.Time{},
		registerFail: map[types.NamespacedName]string{},
		running:      newSightings(),
		outside:      map[types.NamespacedName]bool{},
	}
}

func (p *presenceState) forcedOffline(key types.NamespacedName) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.offline[key]
}

func (p *presenceState) statusOverride(key types.NamespacedName) (statusOverride, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	o, ok := p.override[key]
	return o, ok
}

func (p *presenceState) afterLeaseUntil(uid types.UID) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.afterLease[uid]
	if !t.IsZero() && !time.Now().Before(t) {
		delete(p.afterLease, uid)
		return time.Time{}
	}
	return t
}

func (p *presenceState) setAfterLease(uid types.UID, until time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.afterLease[uid] = until
}
