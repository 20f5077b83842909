// Package eventlog is the vocabulary of the events the controllers record on an
// ExporterSet, and the batch a reconcile collects them in: one event per reason and pass,
// naming the instances, instead of one per instance.
package eventlog

import (
	"fmt"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// Reason is the reason of an event the reconciler records on an ExporterSet. It is a
// type of its own so that only the reasons declared here (and, for instance failures, the
// condition reasons of vtv1alpha1, converted) are recorded.
type Reason string

// Event reasons, one per kind of change or failure the reconciler reports. Changes to
// instances (Created ... Retained) are recorded once per reconcile pass and reason, naming
// the instances (the one instance's object is the event's related object).
const (
	// Created: an instance (Exporter) was created.
	Created Reason = "Created"
	// CreateFailed: creating an instance failed.
	CreateFailed Reason = "CreateFailed"
	// Configured: an instance's exporter config Secret was written.
	Configured Reason = "Configured"
	// PodStarted: an instance's Pod was created.
	PodStarted Reason = "PodStarted"
	// PodRestarted: a terminal Pod was deleted so the instance starts afresh (InPlaceReuse).
	PodRestarted Reason = "PodRestarted"
	// Retiring: an instance was disabled to be removed once unleased.
	Retiring Reason = "Retiring"
	// Retired: a retired instance was deleted.
	Retired Reason = "Retired"
	// Retained: a retired instance was released from the set and kept (reclaimPolicy Retain).
	Retained Reason = "Retained"
	// Recycled: an instance whose exporter exited after its lease was deleted to be replaced.
	Recycled Reason = "Recycled"
	// Renewed: the set's last enabled Exporter, at the ceiling, was kept so that Leases
	// wait for it instead of ending Unsatisfiable; its Pod is replaced by a fresh one, and
	// an outdated one is brought to the current spec (pool/leasewait.go).
	Renewed Reason = "Renewed"
	// LeasesRefused: the set has no enabled Exporter and cannot make one, so the
	// Jumpstarter controller refuses its Leases (LeasesWait=False; the message says why).
	LeasesRefused Reason = "LeasesRefused"
	// BoardsNotPreferred: upstream's core may hand a Lease to one of the set's virtual
	// instances while a board its hardware selector names is free (hardware_policy.go).
	BoardsNotPreferred Reason = "BoardsNotPreferred"
	// InvalidSpec: the class, the parameters or the selector are wrong.
	InvalidSpec Reason = "InvalidSpec"
	// ProvisionerError: the provisioner failed.
	ProvisionerError Reason = "ProvisionerError"
	// DriverWarning: the provisioner warns about the input without refusing it (e.g. a
	// driver type it does not check); one event per warning and version of the set and class.
	DriverWarning Reason = "DriverWarning"
	// Waiting: the set waits for something a person must provide (CA bundle, credentials).
	Waiting Reason = "Waiting"
	// ExternalCreated: an instance's external resources (a remote VM) were created.
	ExternalCreated Reason = "ExternalCreated"
	// OrphanCleaned: external resources whose instance no longer exists were cleaned up.
	OrphanCleaned Reason = "OrphanCleaned"
	// InstanceQuarantined: an instance failed its check between two leases (a lease
	// hook, or its exporter exited with an error after a lease) and was disabled and kept
	// for inspection (quarantine.go).
	InstanceQuarantined Reason = "InstanceQuarantined"
	// BudgetReclaim: idle instances were retired because a CapacityBudget lowered the
	// set's ceiling to give their places to another set's waiting Leases.
	BudgetReclaim Reason = "BudgetReclaim"
	// InvalidAnnotation: a reuse-policy annotation could not be read; its default applies.
	InvalidAnnotation Reason = "InvalidAnnotation"
)

// Batch collects one pass's Normal events by reason, to be recorded as one event per
// reason when the pass ends: events are API writes, and one per instance was a third of the
// controller's requests in a large scale-up. Instances are acted on concurrently, hence the
// lock.
type Batch struct {
	mu    sync.Mutex
	items map[Reason][]eventItem
}

// eventItem is one instance's part of an aggregated event.
type eventItem struct {
	text    string         // the instance, and whatever else the note should say of it
	related runtime.Object // the object changed, named as related when it is the only one
}

// Add notes that reason happened to an instance: text names it, related is the object changed.
func (e *Batch) Add(reason Reason, text string, related runtime.Object) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.items == nil {
		e.items = map[Reason][]eventItem{}
	}
	e.items[reason] = append(e.items[reason], eventItem{text: text, related: related})
}

// batchedEvent is how an aggregated event reads: action, the note of one instance (%s is
// its text) and of several (%d the count, %s the list).
type batchedEvent struct{ action, one, many string }

var batched = map[Reason]batchedEvent{
	Created:         {"Create", "created instance %s", "created %d instances: %s"},
	Configured:      {"Configure", "updated exporter config of %s", "updated the exporter config of %d instances: %s"},
	PodStarted:      {"Start", "started pod of instance %s", "started the pods of %d instances: %s"},
	PodRestarted:    {"Restart", "restarted the terminal pod of %s", "restarted the terminal pods of %d instances: %s"},
	Retiring:        {"Retire", "disabled instance %s to retire it", "disabled %d instances to retire them: %s"},
	Retired:         {"Retire", "deleted retired instance %s", "deleted %d retired instances: %s"},
	Recycled:        {"Recycle", "deleted instance %s after its exporter exited; a fresh one replaces it", "deleted %d instances whose exporters exited; fresh ones replace them: %s"},
	Renewed:         {"Renew", "kept instance %s, the set's last enabled Exporter, so that Leases wait for it; its Pod is replaced by a fresh one", "kept %d instances as the set's last enabled Exporters, their Pods replaced: %s"},
	ExternalCreated: {"CreateExternal", "created the external resources of instance %s", "created the external resources of %d instances: %s"},
	BudgetReclaim:   {"Retire", "retiring idle instance %s: its CapacityBudget gives its place to waiting Leases", "retiring %d idle instances: their CapacityBudget gives their places to waiting Leases: %s"},
	Retained:        {"Retain", "released instance %s from the set; it is kept disabled until deleted by hand (reclaimPolicy Retain)", "released %d instances from the set; they are kept disabled until deleted by hand (reclaimPolicy Retain): %s"},
}

// eventListLimit bounds the list of instances in a note (the API allows 1 kB); the rest
// are counted.
const eventListLimit = 700

// Flush records the collected events on set, one per reason, in a fixed order, and forgets them.
func (e *Batch) Flush(rec events.EventRecorder, set runtime.Object) {
	e.mu.Lock()
	items := e.items
	e.items = nil
	e.mu.Unlock()
	reasons := make([]Reason, 0, len(items))
	for reason := range items {
		reasons = append(reasons, reason)
	}
	sort.Slice(reasons, func(i, j int) bool { return reasons[i] < reasons[j] })
	for _, reason := range reasons {
		list := items[reason]
		how := batched[reason]
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

// MoveTo moves e's events into into, leaving e empty.
func (e *Batch) MoveTo(into *Batch) {
	e.mu.Lock()
	items := e.items
	e.items = nil
	e.mu.Unlock()
	for reason, list := range items {
		for _, it := range list {
			into.Add(reason, it.text, it.related)
		}
	}
}
