package soak

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// The quarantine invariant (issue 31): no lease is assigned to an instance the set has
// quarantined. The checker follows, from its own watches, each Exporter's quarantine spans
// (marked and disabled, from the write that did it to the write of a person enabling it
// again, which puts it back in service) and each Lease's assignment (the status write that
// sets exporterRef), and orders the two by resourceVersion: envtest's are etcd revisions,
// one counter for every object, so "assigned after it was quarantined" is exact, whatever
// lag either watch has. An assignment is judged assignJudgeDelay after the checker saw it,
// so that a quarantine delivered late on the other watch is known by then.
//
// The race it allows: the lease scheduler (jumpsim's, as upstream's) picks from its cache,
// so it may write an assignment just after the quarantine landed, having read the Exporter
// a moment before. An assignment the checker saw within quarantineRaceGrace of the
// quarantine is counted as raced (the summary states how many) rather than reported. Where
// the exporter itself reports the failure it stays busy long enough: a failed afterLease
// hook shows for a second before Available (endLease), onFailure exit leaves it Offline,
// and a failed beforeLease hook is reported while the lease that found it still holds it
// (assigned before the quarantine: not judged).

// assignJudgeDelay is how long after seeing an assignment the checker judges it.
const assignJudgeDelay = 2 * time.Second

// quarantineRaceGrace is how long after the checker saw a quarantine an assignment written
// after it may still be the scheduler's stale cache (plus the skew between the watches).
const quarantineRaceGrace = 2 * time.Second

// qspan is one time an Exporter was quarantined: from the write that marked and disabled it
// (fromRV, seen at from) to the write that ended it (toRV; 0 while it lasts).
type qspan struct {
	fromRV, toRV uint64
	from         time.Time
	mark         string
}

// qExporter is what the watch knows of one Exporter name.
type qExporter struct {
	uid   string
	in    bool // quarantined now
	spans []qspan
}

// qAssignment is a lease assignment seen on the watch.
type qAssignment struct {
	lease, exporter string
	rv              uint64
	seen            time.Time
}

// qFailure is a failed lease hook an exporter reported.
type qFailure struct {
	name, uid, what string
	seen            time.Time
}

// quarantineWatch is the quarantine invariant's memory.
type quarantineWatch struct {
	mu        sync.Mutex
	exporters map[string]*qExporter // by Exporter name (names are generated, not reused)
	pending   []qAssignment
	failures  []qFailure // failed hooks to follow up (hookFollowUp)

	// The summary's counts.
	quarantines, reenabled, hookFailures, judged, raced int
	// leftService and stayed count the failed hooks after which the instance was, or was
	// not, out of service (quarantined, retiring, disabled, deleted) hookFollowUp later.
	leftService, stayed int
}

// hookFollowUp is how long after a failed hook the checker looks whether its instance left
// service (the bound: within 2 s).
const hookFollowUp = 2 * time.Second

func newQuarantineWatch() *quarantineWatch {
	return &quarantineWatch{exporters: map[string]*qExporter{}}
}

// watchQuarantine registers the quarantine invariant's handlers on the checker's informers.
func (c *Checker) watchQuarantine(ctx context.Context) error {
	exporters, err := c.cache.GetInformer(ctx, &jumpstarterv1alpha1.Exporter{})
	if err != nil {
		return err
	}
	if _, err := exporters.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.quarantineSeen(nil, obj) },
		UpdateFunc: c.quarantineSeen,
		DeleteFunc: c.quarantineGone,
	}); err != nil {
		return err
	}
	leases, err := c.cache.GetInformer(ctx, &jumpstarterv1alpha1.Lease{})
	if err != nil {
		return err
	}
	_, err = leases.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.leaseAssigned(nil, obj) },
		UpdateFunc: c.leaseAssigned,
	})
	return err
}

func rvOf(s string) (uint64, bool) {
	n, err := strconv.ParseUint(s, 10, 64)
	return n, err == nil
}

// quarantinedNow is pool.Instance.Quarantined, read independently: marked, disabled and not
// retiring (one retired with an old mark is on its way out, disabled all the same).
func quarantinedNow(e *jumpstarterv1alpha1.Exporter) (string, bool) {
	mark, ok := e.Annotations[quarantinedKey]
	_, retiring := e.Annotations[retiringKey]
	return mark, ok && !e.IsEnabled() && !retiring
}

func hookFailed(e *jumpstarterv1alpha1.Exporter) bool {
	switch e.Status.ExporterStatusValue {
	case jumpstarterv1alpha1.ExporterStatusAfterLeaseHookFailed, jumpstarterv1alpha1.ExporterStatusBeforeLeaseHookFailed:
		return true
	}
	return false
}

// quarantineSeen follows an Exporter's quarantine spans. It also catches a quarantine mark
// written on an enabled Exporter: the set must disable in the same write that marks.
func (c *Checker) quarantineSeen(oldObj, newObj any) {
	n, ok := newObj.(*jumpstarterv1alpha1.Exporter)
	if !ok {
		return
	}
	o, _ := oldObj.(*jumpstarterv1alpha1.Exporter)
	rv, ok := rvOf(n.ResourceVersion)
	if !ok {
		return
	}
	now := time.Now()
	mark, in := quarantinedNow(n)
	markedBefore := false
	if o != nil {
		_, markedBefore = o.Annotations[quarantinedKey]
	}
	_, marked := n.Annotations[quarantinedKey]
	badMark := o != nil && !markedBefore && marked && n.IsEnabled()
	var notes []string
	w := c.qw
	w.mu.Lock()
	if o != nil && !hookFailed(o) && hookFailed(n) {
		w.hookFailures++
		what := fmt.Sprintf("%s reports %s: %s", n.Name, n.Status.ExporterStatusValue, n.Status.StatusMessage)
		notes = append(notes, what)
		if _, set := controllerUID(n, "ExporterSet"); set {
			w.failures = append(w.failures, qFailure{name: n.Name, uid: string(n.UID), what: what, seen: now})
		}
	}
	x := w.exporters[n.Name]
	if x == nil || x.uid != string(n.UID) {
		x = &qExporter{uid: string(n.UID)}
		w.exporters[n.Name] = x
	}
	switch {
	case in && !x.in:
		x.in = true
		x.spans = append(x.spans, qspan{fromRV: rv, from: now, mark: mark})
		if !markedBefore {
			w.quarantines++
		}
		notes = append(notes, fmt.Sprintf("%s quarantined (%s) at resourceVersion %d", n.Name, mark, rv))
	case !in && x.in:
		x.in = false
		x.spans[len(x.spans)-1].toRV = rv
		if marked && n.IsEnabled() {
			w.reenabled++
			notes = append(notes, fmt.Sprintf("%s enabled again at resourceVersion %d: in service", n.Name, rv))
		}
	}
	w.mu.Unlock()
	for _, note := range notes {
		c.history.Record(KindNote, "checker: %s", note)
	}
	if badMark {
		c.Report(InvQuarantineEnabled, n.Name, "%s was marked quarantined (%s) but left enabled (resourceVersion %s -> %s): the set must disable in the write that marks",
			n.Name, n.Annotations[quarantinedKey], o.ResourceVersion, n.ResourceVersion)
	}
}

// quarantineGone ends an Exporter's span at its deletion.
func (c *Checker) quarantineGone(obj any) {
	e, ok := obj.(*jumpstarterv1alpha1.Exporter)
	if !ok {
		return // a tombstone: the span stays open, which judges nothing wrongly (names are not reused)
	}
	rv, ok := rvOf(e.ResourceVersion)
	w := c.qw
	w.mu.Lock()
	defer w.mu.Unlock()
	if x := w.exporters[e.Name]; x != nil && x.uid == string(e.UID) && x.in && ok {
		x.in = false
		x.spans[len(x.spans)-1].toRV = rv
	}
}

// leaseAssigned notes the write that assigns a lease: exporterRef set where it was not. A
// lease first seen already assigned (only after a re-list) is not judged: its assignment's
// resourceVersion is unknown.
func (c *Checker) leaseAssigned(oldObj, newObj any) {
	n, ok := newObj.(*jumpstarterv1alpha1.Lease)
	if !ok || n.Status.ExporterRef == nil || n.Status.ExporterRef.Name == "" {
		return
	}
	o, _ := oldObj.(*jumpstarterv1alpha1.Lease)
	if o == nil || (o.Status.ExporterRef != nil && o.Status.ExporterRef.Name != "") {
		if o == nil {
			c.history.Record(KindNote, "checker: lease %s first seen already assigned (to %s): its assignment is not judged", n.Name, n.Status.ExporterRef.Name)
		}
		return
	}
	if n.Spec.AllowDisabled {
		return // a person inspecting a disabled (quarantined) instance on purpose
	}
	rv, ok := rvOf(n.ResourceVersion)
	if !ok {
		return
	}
	w := c.qw
	w.mu.Lock()
	w.pending = append(w.pending, qAssignment{lease: n.Name, exporter: n.Status.ExporterRef.Name, rv: rv, seen: time.Now()})
	w.mu.Unlock()
}

// judgeAssignments judges the assignments seen at least assignJudgeDelay before now (all of
// them when all is set: the end of the run): one written while its Exporter was
// quarantined, more than quarantineRaceGrace after the checker saw the quarantine, is a
// violation.
func (c *Checker) judgeAssignments(now time.Time, all bool) {
	type found struct{ lease, exporter, detail string }
	var broken []found
	w := c.qw
	w.mu.Lock()
	rest := w.pending[:0]
	for _, a := range w.pending {
		if !all && now.Sub(a.seen) < assignJudgeDelay {
			rest = append(rest, a)
			continue
		}
		w.judged++
		x := w.exporters[a.exporter]
		if x == nil {
			continue
		}
		for _, s := range x.spans {
			if a.rv <= s.fromRV || s.toRV != 0 && a.rv >= s.toRV {
				continue
			}
			if lag := a.seen.Sub(s.from); lag <= quarantineRaceGrace {
				w.raced++
				c.history.Record(KindNote, "checker: lease %s assigned to %s (resourceVersion %d) just after its quarantine (%d, %s), seen %s apart: the scheduler's cache, allowed",
					a.lease, a.exporter, a.rv, s.fromRV, s.mark, lag.Round(time.Millisecond))
				break
			}
			broken = append(broken, found{a.lease, a.exporter, fmt.Sprintf("lease %s was assigned to %s (resourceVersion %d, seen %s) while it was quarantined (%s, since resourceVersion %d, seen %s, %s before the assignment)",
				a.lease, a.exporter, a.rv, a.seen.Format("15:04:05.000"), s.mark, s.fromRV, s.from.Format("15:04:05.000"), a.seen.Sub(s.from).Round(time.Millisecond))})
			break
		}
	}
	w.pending = rest
	w.mu.Unlock()
	for _, b := range broken {
		c.Report(InvLeaseToQuarantined, b.exporter, "%s", b.detail)
	}
}

// followHookFailures looks, hookFollowUp after each failed hook, whether its instance has
// left service: quarantined since (a person may have enabled it again meanwhile), or now
// disabled, deleted or gone. It is counted, not judged: the controller may have been down (restarted by
// the walk) while the exporter reported, and its memory of the report is gone with it.
func (c *Checker) followHookFailures(ctx context.Context, now time.Time) {
	w := c.qw
	w.mu.Lock()
	due, rest := takeDue(w.failures, func(f qFailure) bool { return now.Sub(f.seen) >= hookFollowUp })
	w.failures = rest
	w.mu.Unlock()
	for _, f := range due {
		var e jumpstarterv1alpha1.Exporter
		err := c.cache.Get(ctx, client.ObjectKey{Namespace: c.ns, Name: f.name}, &e)
		if err != nil && !apierrors.IsNotFound(err) {
			continue
		}
		out := err != nil || string(e.UID) != f.uid || e.DeletionTimestamp != nil || !e.IsEnabled()
		w.mu.Lock()
		if x := w.exporters[f.name]; x != nil && x.uid == f.uid {
			for _, sp := range x.spans {
				// Quarantined after the report (then perhaps enabled again by the walk).
				out = out || !sp.from.Before(f.seen.Add(-time.Second))
			}
		}
		if out {
			w.leftService++
		} else {
			w.stayed++
		}
		w.mu.Unlock()
		if !out {
			c.history.Record(KindNote, "checker: %s still in service %s after it reported a failed hook (%s); lease %s, status %s",
				f.name, now.Sub(f.seen).Round(time.Millisecond), f.what, leaseOf(&e), e.Status.ExporterStatusValue)
		}
	}
}

// FlushQuarantine judges the assignments still pending: the run calls it after the settle.
func (c *Checker) FlushQuarantine() { c.judgeAssignments(time.Now(), true) }

// QuarantineStats returns the quarantine invariant's counts: quarantines seen (a mark
// written with the disable), quarantined instances a person enabled again, failed lease
// hooks the exporters reported, lease assignments judged, and those written just after a
// quarantine within the race grace.
func (c *Checker) QuarantineStats() (quarantines, reenabled, hookFailures, judged, raced int) {
	w := c.qw
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.quarantines, w.reenabled, w.hookFailures, w.judged, w.raced
}

// HookFollowUps returns how many failed hooks were followed by their instance leaving
// service within hookFollowUp, and how many were not.
func (c *Checker) HookFollowUps() (left, stayed int) {
	w := c.qw
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.leftService, w.stayed
}
