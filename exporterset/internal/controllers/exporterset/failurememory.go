package exporterset

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/internal/state"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// Failure backoff defaults: the first replacement after a failure waits 2s, each further
// consecutive failure doubles it, up to 5 minutes. A permanently broken class then creates a
// handful of instances in its first minute and one batch per 5 minutes after that.
const (
	DefaultFailureBackoffBase = 2 * time.Second
	DefaultFailureBackoffCap  = 5 * time.Minute
)

// failureMemory is the reconciler's memory of instance failures: per set the consecutive
// count and the last failure, per instance whether it was ever ready (a failure counts only
// before that, or as a crash loop), which failure was counted and the reasons seen. It is a
// view of memory (memory.go): the set's record goes with the set, an instance's with the
// instance (memory's sweep). A restarted controller starts without backoff and counts
// again, which costs at most one more batch.
type failureMemory struct {
	sets      *state.Memo[*setFailures]
	instances *state.Memo[*instanceFailures]
}

type setFailures struct {
	version     string // the set's and class's versions: a change resets the count
	consecutive int
	lastAt      time.Time
	last        *pool.Problem
	lastName    string
	reuse       reuseCount // the quarantines in a row, for the circuit breaker (quarantine.go)
}

type instanceFailures struct {
	everReady  bool
	failedOnce bool                                // a failure of it was counted
	counted    types.UID                           // the failure (failureKey) last counted
	seen       map[vtv1alpha1.ConditionReason]bool // reasons seen, for the metric
	leasedOn   types.UID                           // the Pod it was last seen leased on (quarantine.go)
	checking   bool                                // seen leased, not yet back Available (quarantine.go)
	renewing   bool                                // renewed instead of quarantined, its failed check not acted on again (quarantine_lastplace.go)
	renewPod   types.UID                           // the Pod being replaced for it, until it is
}

// observe updates a set's memory from its instances (their Problems already diagnosed) and
// returns the backoff state. version identifies the set's and class's specs: a person who
// fixes an image must not wait out the cap. An instance newly ready also resets the count.
func (m failureMemory) observe(key, version string, now time.Time, instances []*pool.Instance, problems pool.Problems, base, limit time.Duration) pool.Backoff {
	s := m.sets.SetOrPut(key, func() *setFailures { return &setFailures{} })
	if s.version != version {
		s.version, s.consecutive, s.last, s.lastName, s.reuse = version, 0, nil, "", reuseCount{}
	}
	var out pool.Backoff
	for _, in := range instances {
		uid := in.Exporter.UID
		f := m.instances.InstanceOrPut(key, uid, func() *instanceFailures { return &instanceFailures{} })
		// Retiring instances are not diagnosed (no Problem) and may still be registered;
		// one whose failure was counted is no proof the spec works.
		if in.Ready() && problems.Of(in) == nil && !objects.OutOfPool(in) && !f.failedOnce && !f.everReady {
			f.everReady = true
			s.consecutive, s.last, s.lastName = 0, nil, "" // a working instance: the spec is fine
		}
		pr := problems.Of(in)
		if pr == nil {
			continue
		}
		// Each reason counts once per instance, however often it comes and goes (an image
		// pull between two back-offs shows no problem for a moment).
		if !f.seen[pr.Reason] {
			if f.seen == nil {
				f.seen = map[vtv1alpha1.ConditionReason]bool{}
			}
			f.seen[pr.Reason] = true
			out.New = append(out.New, pr)
		}
		failed := pr.Reason == vtv1alpha1.ReasonTargetCrashing || pr.Replace && !f.everReady
		if fk := failureKey(in); failed && f.counted != fk {
			f.counted, f.failedOnce = fk, true
			s.consecutive++
			s.lastAt, s.last, s.lastName = now, pr, in.Name()
		}
	}
	out.Failures, out.Last, out.LastName = s.consecutive, s.last, s.lastName
	if s.consecutive > 0 {
		out.Until = s.lastAt.Add(pool.BackoffDelay(s.consecutive, base, limit))
	}
	return out
}

// failing reports whether the set's last pass counted failures (it backs off, or did).
func (m failureMemory) failing(key string) bool {
	s, ok := m.sets.ForSet(key)
	return ok && s.consecutive > 0
}

// failureKey identifies one failure of an instance: its current Pod, so that an InPlaceReuse
// instance whose fresh Pods keep failing counts each time (and backs off), while one Pod's
// crash loop counts once.
func failureKey(in *pool.Instance) types.UID {
	if pod := currentPod(in); pod != nil {
		return in.Exporter.UID + "/" + pod.UID
	}
	return in.Exporter.UID
}
