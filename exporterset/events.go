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
	// EventCreated: an instance (Exporter) was created.
	EventCreated EventReason = "Created"
	// EventCreateFailed: creating an instance failed.
	EventCreateFailed EventReason = "CreateFailed"
	// EventConfigured: an instance's exporter config Secret was written.
	EventConfigured EventReason = "Configured"
	// EventPodStarted: an instance's Pod was created.
	EventPodStarted EventReason = "PodStarted"
	// EventPodRestarted: a terminal Pod was deleted so the instance starts afresh (InPlaceReuse).
	EventPodRestarted EventReason = "PodRestarted"
	// EventRetiring: an instance was disabled to be removed once unleased.
	EventRetiring EventReason = "Retiring"
	// EventRetired: a retired instance was deleted.
	EventRetired EventReason = "Retired"
	// EventRetained: a retired instance was released from the set and kept (reclaimPolicy Retain).
	EventRetained EventReason = "Retained"
	// EventRecycled: an instance whose exporter exited after its lease was deleted to be replaced.
	EventRecycled EventReason = "Recycled"
	// EventInvalidSpec: the class, the parameters or the selector are wrong.
	EventInvalidSpec EventReason = "InvalidSpec"
	// EventProvisionerError: the provisioner failed.
	EventProvisionerError EventReason = "ProvisionerError"
	// EventDriverWarning: the provisioner warns about the input without refusing it (e.g. a
	// driver type it does not check); one event per warning and version of the set and class.
	EventDriverWarning EventReason = "DriverWarning"
	// EventWaiting: the set waits for something a person must provide (CA bundle, credentials).
	EventWaiting EventReason = "Waiting"
	// EventExternalCreated: an instance's external resources (a remote VM) were created.
	EventExternalCreated EventReason = "ExternalCreated"
	// EventOrphanCleaned: external resources whose instance no longer exists were cleaned up.
	EventOrphanCleaned EventReason = "OrphanCleaned"
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
	EventCreated:         {"Create", "created instance %s", "created %d instances: %s"},
	EventConfigured:      {"Configure", "updated exporter config of %s", "updated the exporter config of %d instances: %s"},
	EventPodStarted:      {"Start", "started pod of instance %s", "started the pods of %d instances: %s"},
	EventPodRestarted:    {"Restart", "restarted the terminal pod of %s", "restarted the terminal pods of %d instances: %s"},
	EventRetiring:        {"Retire", "disabled instance %s to retire it", "disabled %d instances to retire them: %s"},
	EventRetired:         {"Retire", "deleted retired instance %s", "deleted %d retired instances: %s"},
	EventRecycled:        {"Recycle", "deleted instance %s after its exporter exited; a fresh one replaces it", "deleted %d instances whose exporters exited; fresh ones replace them: %s"},
	EventExternalCreated: {"CreateExternal", "created the external resources of instance %s", "created the external resources of %d instances: %s"},
	EventRetained:        {"Retain", "released instance %s from the set; it is kept disabled until deleted by hand (reclaimPolicy Retain)", "released %d instances from the set; they are kept disabled until deleted by hand (reclaimPolicy Retain): %s"},
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
