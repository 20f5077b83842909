package exporterset

import (
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// Failure backoff defaults: the first replacement after a failure waits 2s, each further
// consecutive failure doubles it, up to 5 minutes. A permanently broken class then creates a
// handful of instances in its first minute and one batch per 5 minutes after that.
const (
	DefaultFailureBackoffBase = 2 * time.Second
	DefaultFailureBackoffCap  = 5 * time.Minute
)

// backoffState is what a pass needs to know of a set's failure backoff.
type backoffState struct {
	// Failures counts consecutive failures; 0 when none (no backoff).
	Failures int
	// Until is when new instances and Pods may be started again; zero when not backing off.
	Until time.Time
	// Last is the most recent counted failure and its instance, for the message.
	Last     *Problem
	LastName string
	// New are the problems first seen this pass (for the failures metric).
	New []*Problem
}

// active reports whether the set must wait at now.
func (b backoffState) active(now time.Time) bool { return b.Failures > 0 && now.Before(b.Until) }

// message says why the set waits and until when, or, once the delay has passed, that it is
// trying again with no instance ready since.
func (b backoffState) message(now time.Time) string {
	msg := fmt.Sprintf("%d consecutive instance failures; next attempt at %s", b.Failures, b.Until.UTC().Format(time.RFC3339))
	if !b.active(now) {
		msg = fmt.Sprintf("%d consecutive instance failures; trying again since %s, and no instance has become ready since the first", b.Failures, b.Until.UTC().Format(time.RFC3339))
	}
	if b.Last != nil {
		msg += fmt.Sprintf("; last: instance %s: %s: %s", b.LastName, b.Last.Reason, b.Last.Message)
	}
	return msg
}

// suffix is the backoff note added to a failure message, "" when not backing off.
func (b backoffState) suffix(now time.Time) string {
	if !b.active(now) {
		return ""
	}
	return fmt.Sprintf("; backing off after %d consecutive failures: next attempt at %s", b.Failures, b.Until.UTC().Format(time.RFC3339))
}

// failureMemory is the reconciler's per-set memory of instance failures: which instances
// were ever ready (a failure counts only before that, or as a crash loop), which failures
// were counted, and the consecutive count. It lives in memory: a restarted controller
// starts without backoff and counts again, which costs at most one more batch.
type failureMemory struct {
	mu   sync.Mutex
	sets map[string]*setFailures
}

type setFailures struct {
	version     string // the set's and class's versions: a change resets the count
	everReady   map[types.UID]bool
	counted     map[types.UID]bool                                // failure keys (failureKey) counted
	failedOnce  map[types.UID]bool                                // instances with a counted failure
	seen        map[types.UID]map[vtv1alpha1.ConditionReason]bool // reasons seen per instance, for the metric
	consecutive int
	lastAt      time.Time
	last        *Problem
	lastName    string
}

func newFailureMemory() *failureMemory { return &failureMemory{sets: map[string]*setFailures{}} }

// observe updates a set's memory from its instances (their Problems already diagnosed) and
// returns the backoff state. version identifies the set's and class's specs: a person who
// fixes an image must not wait out the cap. An instance newly ready also resets the count.
func (m *failureMemory) observe(key, version string, now time.Time, instances []*Instance, problems Problems, base, limit time.Duration) backoffState {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sets[key]
	if s == nil {
		s = &setFailures{everReady: map[types.UID]bool{}, counted: map[types.UID]bool{}, failedOnce: map[types.UID]bool{}, seen: map[types.UID]map[vtv1alpha1.ConditionReason]bool{}}
		m.sets[key] = s
	}
	if s.version != version {
		s.version, s.consecutive, s.last, s.lastName = version, 0, nil, ""
	}
	var out backoffState
	present := make(map[types.UID]bool, 2*len(instances))
	for _, in := range instances {
		uid := in.Exporter.UID
		key := failureKey(in)
		present[uid], present[key] = true, true
		// Retiring instances are not diagnosed (no Problem) and may still be registered;
		// one whose failure was counted is no proof the spec works.
		if in.Ready() && problems.Of(in) == nil && !in.Retiring() && !in.Deleting() && !s.failedOnce[uid] && !s.everReady[uid] {
			s.everReady[uid] = true
			s.consecutive, s.last, s.lastName = 0, nil, "" // a working instance: the spec is fine
		}
		pr := problems.Of(in)
		if pr == nil {
			continue
		}
		// Each reason counts once per instance, however often it comes and goes (an image
		// pull between two back-offs shows no problem for a moment).
		if !s.seen[uid][pr.Reason] {
			if s.seen[uid] == nil {
				s.seen[uid] = map[vtv1alpha1.ConditionReason]bool{}
			}
			s.seen[uid][pr.Reason] = true
			out.New = append(out.New, pr)
		}
		failed := pr.Reason == vtv1alpha1.ReasonTargetCrashing || pr.Replace && !s.everReady[uid]
		if failed && !s.counted[key] {
			s.counted[key], s.failedOnce[uid] = true, true
			s.consecutive++
			s.lastAt, s.last, s.lastName = now, pr, in.Name()
		}
	}
	for _, mp := range []map[types.UID]bool{s.everReady, s.counted, s.failedOnce} {
		for uid := range mp {
			if !present[uid] {
				delete(mp, uid) // the instance is gone: nothing of it is kept
			}
		}
	}
	for uid := range s.seen {
		if !present[uid] {
			delete(s.seen, uid)
		}
	}
	out.Failures, out.Last, out.LastName = s.consecutive, s.last, s.lastName
	if s.consecutive > 0 {
		out.Until = s.lastAt.Add(backoffDelay(s.consecutive, base, limit))
	}
	return out
}

// failureKey identifies one failure of an instance: its current Pod, so that an InPlaceReuse
// instance whose fresh Pods keep failing counts each time (and backs off), while one Pod's
// crash loop counts once.
func failureKey(in *Instance) types.UID {
	if pod := currentPod(in); pod != nil {
		return in.Exporter.UID + "/" + pod.UID
	}
	return in.Exporter.UID
}

// forget drops a deleted set's memory.
func (m *failureMemory) forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.sets, key)
}

// backoffDelay is base * 2^(n-1), capped at limit.
func backoffDelay(n int, base, limit time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}
