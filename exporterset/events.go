package exporterset

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// Event reasons, one per kind of change or failure the reconciler reports. Changes to
// instances (Created ... Retained) are recorded once per reconcile pass and reason, naming
// the instances (the one instance's object is the event's related object).
const (
	// EventCreated: an instance (Exporter) was created.
	EventCreated = "Created"
	// EventCreateFailed: creating an instance failed.
	EventCreateFailed = "CreateFailed"
	// EventConfigured: an instance's exporter config Secret was written.
	EventConfigured = "Configured"
	// EventPodStarted: an instance's Pod was created.
	EventPodStarted = "PodStarted"
	// EventPodRestarted: a terminal Pod was deleted so the instance starts afresh (InPlaceReuse).
	EventPodRestarted = "PodRestarted"
	// EventRetiring: an instance was disabled to be removed once unleased.
	EventRetiring = "Retiring"
	// EventRetired: a retired instance was deleted.
	EventRetired = "Retired"
	// EventRetained: a retired instance was released from the set and kept (reclaimPolicy Retain).
	EventRetained = "Retained"
	// EventRecycled: an instance whose exporter exited after its lease was deleted to be replaced.
	EventRecycled = "Recycled"
	// EventInvalidSpec: the class, the parameters or the selector are wrong.
	EventInvalidSpec = "InvalidSpec"
	// EventProvisionerError: the provisioner failed.
	EventProvisionerError = "ProvisionerError"
	// EventDriverWarning: the provisioner warns about the input without refusing it (e.g. a
	// driver type it does not check); one event per warning and version of the set and class.
	EventDriverWarning = "DriverWarning"
	// EventWaiting: the set waits for something a person must provide (CA bundle, credentials).
	EventWaiting = "Waiting"
)

// passEvents collects one pass's Normal events by reason, to be recorded as one event per
// reason when the pass ends: events are API writes, and one per instance was a third of the
// controller's requests in a large scale-up. Instances are acted on concurrently, hence the
// lock.
type passEvents struct {
	mu    sync.Mutex
	items map[string][]eventItem
}

// eventItem is one instance's part of an aggregated event.
type eventItem struct {
	text    string         // the instance, and whatever else the note should say of it
	related runtime.Object // the object changed, named as related when it is the only one
}

// add notes that reason happened to an instance: text names it, related is the object changed.
func (e *passEvents) add(reason, text string, related runtime.Object) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.items == nil {
		e.items = map[string][]eventItem{}
	}
	e.items[reason] = append(e.items[reason], eventItem{text: text, related: related})
}

// batchedEvent is how an aggregated event reads: action, the note of one instance (%s is
// its text) and of several (%d the count, %s the list).
type batchedEvent struct{ action, one, many string }

var batchedEvents = map[string]batchedEvent{
	EventCreated:      {"Create", "created instance %s", "created %d instances: %s"},
	EventConfigured:   {"Configure", "updated exporter config of %s", "updated the exporter config of %d instances: %s"},
	EventPodStarted:   {"Start", "started pod of instance %s", "started the pods of %d instances: %s"},
	EventPodRestarted: {"Restart", "restarted the terminal pod of %s", "restarted the terminal pods of %d instances: %s"},
	EventRetiring:     {"Retire", "disabled instance %s to retire it", "disabled %d instances to retire them: %s"},
	EventRetired:      {"Retire", "deleted retired instance %s", "deleted %d retired instances: %s"},
	EventRecycled:     {"Recycle", "deleted instance %s after its exporter exited; a fresh one replaces it", "deleted %d instances whose exporters exited; fresh ones replace them: %s"},
	EventRetained:     {"Retain", "released instance %s from the set; it is kept disabled until deleted by hand (reclaimPolicy Retain)", "released %d instances from the set; they are kept disabled until deleted by hand (reclaimPolicy Retain): %s"},
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
	reasons := make([]string, 0, len(items))
	for reason := range items {
		reasons = append(reasons, reason)
	}
	sort.Strings(reasons)
	for _, reason := range reasons {
		list := items[reason]
		how := batchedEvents[reason]
		if len(list) == 1 {
			rec.Eventf(set, list[0].related, "Normal", reason, how.action, how.one, list[0].text)
			continue
		}
		texts := make([]string, len(list))
		for i, it := range list {
			texts[i] = it.text
		}
		rec.Eventf(set, nil, "Normal", reason, how.action, how.many, len(list), joinBounded(texts, eventListLimit))
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
