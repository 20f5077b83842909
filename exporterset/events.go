package exporterset

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// EventReason is the reason of an event the reconciler records on an ExporterSet. It is a
// type of its own so that only the reasons declared here (and, for instance failures, the
// condition reasons of vtv1alpha1, converted) are recorded.
type EventReason string

// Event reasons, one per kind of change or failure the reconciler reports. Changes to
// instances (Created ... Retained) are recorded once per reconcile pass and reason, naming
// the instances (the one instance's object is the event's related object).
const (
	// eventCreated: an instance (Exporter) was created.
	eventCreated EventReason = "Created"
	// eventCreateFailed: creating an instance failed.
	eventCreateFailed EventReason = "CreateFailed"
	// eventConfigured: an instance's exporter config Secret was written.
	eventConfigured EventReason = "Configured"
	// eventPodStarted: an instance's Pod was created.
	eventPodStarted EventReason = "PodStarted"
	// eventPodRestarted: a terminal Pod was deleted so the instance starts afresh (InPlaceReuse).
	eventPodRestarted EventReason = "PodRestarted"
	// eventRetiring: an instance was disabled to be removed once unleased.
	eventRetiring EventReason = "Retiring"
	// eventRetired: a retired instance was deleted.
	eventRetired EventReason = "Retired"
	// eventRetained: a retired instance was released from the set and kept (reclaimPolicy Retain).
	eventRetained EventReason = "Retained"
	// eventRecycled: an instance whose exporter exited after its lease was deleted to be replaced.
	eventRecycled EventReason = "Recycled"
	// eventRenewed: the set's last enabled Exporter, at the ceiling, was kept so that Leases
	// wait for it instead of ending Unsatisfiable; its Pod is replaced by a fresh one, and
	// an outdated one is brought to the current spec (pool/leasewait.go).
	eventRenewed EventReason = "Renewed"
	// eventLeasesRefused: the set has no enabled Exporter and cannot make one, so the
	// Jumpstarter controller refuses its Leases (LeasesWait=False; the message says why).
	eventLeasesRefused EventReason = "LeasesRefused"
	// eventBoardsNotPreferred: upstream's core may hand a Lease to one of the set's virtual
	// instances while a board its hardware selector names is free (hardware_policy.go).
	eventBoardsNotPreferred EventReason = "BoardsNotPreferred"
	// eventInvalidSpec: the class, the parameters or the selector are wrong.
	eventInvalidSpec EventReason = "InvalidSpec"
	// eventProvisionerError: the provisioner failed.
	eventProvisionerError EventReason = "ProvisionerError"
	// eventDriverWarning: the provisioner warns about the input without refusing it (e.g. a
	// driver type it does not check); one event per warning and version of the set and class.
	eventDriverWarning EventReason = "DriverWarning"
	// eventWaiting: the set waits for something a person must provide (CA bundle, credentials).
	eventWaiting EventReason = "Waiting"
	// eventExternalCreated: an instance's external resources (a remote VM) were created.
	eventExternalCreated EventReason = "ExternalCreated"
	// eventOrphanCleaned: external resources whose instance no longer exists were cleaned up.
	eventOrphanCleaned EventReason = "OrphanCleaned"
	// eventInstanceQuarantined: an instance failed its check between two leases (a lease
	// hook, or its exporter exited with an error after a lease) and was disabled and kept
	// for inspection (quarantine.go).
	eventInstanceQuarantined EventReason = "InstanceQuarantined"
	// eventBudgetReclaim: idle instances were retired because a CapacityBudget lowered the
	// set's ceiling to give their places to another set's waiting Leases.
	eventBudgetReclaim EventReason = "BudgetReclaim"
	// eventInvalidAnnotation: a reuse-policy annotation could not be read; its default applies.
	eventInvalidAnnotation EventReason = "InvalidAnnotation"
)

// passEvents collects one pass's Normal events by reason, to be recorded as one event per
// reason when the pass ends: events are API writes, and one per instance was a third of the
// controller's requests in a large scale-up. Instances are acted on concurrently, hence the
// lock.
type passEvents struct {
	mu    sync.Mutex
	items map[EventReason][]eventItem
}

// eventItem is one instance's part of an aggregated event.
type eventItem struct {
	text    string         // the instance, and whatever else the note should say of it
	related runtime.Object // the object changed, named as related when it is the only one
}

// add notes that reason happened to an instance: text names it, related is the object changed.
func (e *passEvents) add(reason EventReason, text string, related runtime.Object) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.items == nil {
		e.items = map[EventReason][]eventItem{}
	}
	e.items[reason] = append(e.items[reason], eventItem{text: text, related: related})
}

// batchedEvent is how an aggregated event reads: action, the note of one instance (%s is
// its text) and of several (%d the count, %s the list).
type batchedEvent struct{ action, one, many string }

var batchedEvents = map[EventReason]batchedEvent{
	eventCreated:         {"Create", "created instance %s", "created %d instances: %s"},
	eventConfigured:      {"Configure", "updated exporter config of %s", "updated the exporter config of %d instances: %s"},
	eventPodStarted:      {"Start", "started pod of instance %s", "started the pods of %d instances: %s"},
	eventPodRestarted:    {"Restart", "restarted the terminal pod of %s", "restarted the terminal pods of %d instances: %s"},
	eventRetiring:        {"Retire", "disabled instance %s to retire it", "disabled %d instances to retire them: %s"},
	eventRetired:         {"Retire", "deleted retired instance %s", "deleted %d retired instances: %s"},
	eventRecycled:        {"Recycle", "deleted instance %s after its exporter exited; a fresh one replaces it", "deleted %d instances whose exporters exited; fresh ones replace them: %s"},
	eventRenewed:         {"Renew", "kept instance %s, the set's last enabled Exporter, so that Leases wait for it; its Pod is replaced by a fresh one", "kept %d instances as the set's last enabled Exporters, their Pods replaced: %s"},
	eventExternalCreated: {"CreateExternal", "created the external resources of instance %s", "created the external resources of %d instances: %s"},
	eventBudgetReclaim:   {"Retire", "retiring idle instance %s: its CapacityBudget gives its place to waiting Leases", "retiring %d idle instances: their CapacityBudget gives their places to waiting Leases: %s"},
	eventRetained:        {"Retain", "released instance %s from the set; it is kept disabled until deleted by hand (reclaimPolicy Retain)", "released %d instances from the set; they are kept disabled until deleted by hand (reclaimPolicy Retain): %s"},
}

// eventListLimit bounds the list of instances in a note (the API allows 1 kB); the rest
// are counted.
const eventListLimit = 700

// flush records the collected events on set, one per reason, in a fixed order, and forgets them.
func (e *passEvents) flush(rec events.EventRecorder, set runtime.Object) {
	e.mu.Lock()
	items := e.items
	e.items = nil
	e.mu.Unlock()
	reasons := make([]EventReason, 0, len(items))
	for reason := range items {
		reasons = append(reasons, reason)
	}
	sort.Slice(reasons, func(i, j int) bool { return reasons[i] < reasons[j] })
	for _, reason := range reasons {
		list := items[reason]
		how := batchedEvents[reason]
		if len(list) == 1 {
			rec.Eventf(set, list[0].related, "Normal", string(reason), how.action, how.one, list[0].text)
			continue
		}
		texts := make([]string, len(list))
		for i, it := range list {
			texts[i] = it.text
		}
		rec.Eventf(set, nil, "Normal", string(reason), how.action, how.many, len(list), joinBounded(texts, eventListLimit))
	}
}

// joinBounded joins the sorted texts with commas up to about limit bytes and counts the rest.
func joinBounded(texts []string, limit int) string {
	sort.Strings(texts)
	var b strings.Builder
	for i, t := range texts {
		if i > 0 && b.Len()+len(t) > limit {
			fmt.Fprintf(&b, " and %d more", len(texts)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(t)
	}
	return b.String()
}

// warning records a Warning event on the set (related may be nil).
func (r *Reconciler) warning(set, related runtime.Object, reason EventReason, action, format string, args ...any) {
	r.recorder.Eventf(set, related, "Warning", string(reason), action, format, args...)
}
