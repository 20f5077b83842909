package pool

import (
	"fmt"
	"time"
)

// Backoff is what a pass needs to know of a set's failure backoff.
type Backoff struct {
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

// Active reports whether the set must wait at now.
func (b Backoff) Active(now time.Time) bool { return b.Failures > 0 && now.Before(b.Until) }

// Message says why the set waits and until when, or, once the delay has passed, that it is
// trying again with no instance ready since.
func (b Backoff) Message(now time.Time) string {
	msg := fmt.Sprintf("%d consecutive instance failures; next attempt at %s", b.Failures, b.Until.UTC().Format(time.RFC3339))
	if !b.Active(now) {
		msg = fmt.Sprintf("%d consecutive instance failures; trying again since %s, and no instance has become ready since the first", b.Failures, b.Until.UTC().Format(time.RFC3339))
	}
	if b.Last != nil {
		msg += fmt.Sprintf("; last: instance %s: %s: %s", b.LastName, b.Last.Reason, b.Last.Message)
	}
	return msg
}

// Suffix is the backoff note added to a failure message, "" when not backing off.
func (b Backoff) Suffix(now time.Time) string {
	if !b.Active(now) {
		return ""
	}
	return fmt.Sprintf("; backing off after %d consecutive failures: next attempt at %s", b.Failures, b.Until.UTC().Format(time.RFC3339))
}

// BackoffDelay is base * 2^(n-1), capped at limit.
func BackoffDelay(n int, base, limit time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}
