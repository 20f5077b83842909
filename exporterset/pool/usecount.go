package pool

import (
	"strconv"
	"time"
)

// Retirement by use (the set's max-use-count, InPlaceReuse only): the set reconciler counts
// the leases each instance serves on the Exporter itself, so the count survives a restart of
// the controller, and retires an instance once it has served its last lease, as
// ExitAndReplace would after one.
const (
	// AnnotationUseCount is how many leases the instance has served (counted as each begins).
	AnnotationUseCount = "virtualtarget.jumpstarter.dev/use-count"
	// AnnotationLastLease names the last lease counted, so that each lease counts once.
	AnnotationLastLease = "virtualtarget.jumpstarter.dev/last-lease"
	// AnnotationIdleSince is when the set first saw the instance unleased after its last
	// lease (RFC 3339): the idle clock of max-idle-age starts there (idleage.go).
	AnnotationIdleSince = "virtualtarget.jumpstarter.dev/idle-since"
)

// UseCount is the number of leases the instance has served as counted so far; 0 when not
// counted or unreadable.
func (i *Instance) UseCount() int {
	n, err := strconv.Atoi(i.Exporter.Annotations[AnnotationUseCount])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// usedUp reports an instance that has served max leases (max 0: no limit) and whose last
// lease the set has seen end (AnnotationIdleSince): a lease the Jumpstarter controller has
// assigned but whose leaseRef the cache does not show yet is counted already, and must not
// look like an ended one.
func usedUp(i *Instance, max int) bool {
	return max > 0 && i.UseCount() >= max && i.Exporter.Annotations[AnnotationIdleSince] != ""
}

// UseRecord returns the annotations to change on the instance so that they record what is
// seen now: lease is the lease it serves ("" for none). A lease not counted yet raises the
// count and stops the idle clock; the first sight of the instance unleased after a counted
// lease starts the idle clock at now. A nil value deletes the annotation; an empty map:
// nothing to write. It is pure: the caller writes it with the Exporter's resourceVersion, so
// that a stale view can never count a lease twice or lower the count.
func UseRecord(i *Instance, lease string, now time.Time) map[string]*string {
	a := i.Exporter.Annotations
	out := map[string]*string{}
	switch {
	case lease != "" && a[AnnotationLastLease] != lease:
		count := strconv.Itoa(i.UseCount() + 1)
		out[AnnotationUseCount] = &count
		out[AnnotationLastLease] = &lease
		if _, ok := a[AnnotationIdleSince]; ok {
			out[AnnotationIdleSince] = nil
		}
	case lease == "" && a[AnnotationLastLease] != "" && a[AnnotationIdleSince] == "":
		since := now.UTC().Format(time.RFC3339)
		out[AnnotationIdleSince] = &since
	}
	return out
}
