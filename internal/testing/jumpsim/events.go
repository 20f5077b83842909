package jumpsim

import (
	"fmt"
	"sync"
	"time"
)

// Actions recorded in Events.
const (
	ActionCredentialIssued   = "CredentialIssued"
	ActionTokenRotated       = "TokenRotated"
	ActionExporterOnline     = "ExporterOnline"
	ActionExporterOffline    = "ExporterOffline"
	ActionLeasePending       = "LeasePending"
	ActionLeaseAssigned      = "LeaseAssigned"
	ActionLeaseUnsatisfiable = "LeaseUnsatisfiable"
	ActionLeaseInvalid       = "LeaseInvalid"
	ActionLeaseEnded         = "LeaseEnded"
	ActionPodBound           = "PodBound"
	ActionPodWaiting         = "PodWaiting"
	ActionPodRunning         = "PodRunning"
	ActionPodSucceeded       = "PodSucceeded"
	ActionPodFailed          = "PodFailed"
	ActionPodRestarted       = "PodRestarted"
	ActionPodFinalized       = "PodFinalized"
	ActionPodUnschedulable   = "PodUnschedulable"
	ActionImagePullFailed    = "ImagePullFailed"
	ActionContainerCrashed   = "ContainerCrashed"
	ActionContainerRestarted = "ContainerRestarted"
	ActionPodEvicted         = "PodEvicted"
	ActionPodNodeLost        = "PodNodeLost"
	ActionNodeLost           = "NodeLost"
	ActionNodeRestored       = "NodeRestored"
	ActionNodeChanged        = "NodeChanged"
	ActionNotRegistering     = "NotRegistering"
	ActionFaultSet           = "FaultSet"
	ActionFaultCleared       = "FaultCleared"
	ActionGCDeleted          = "GCDeleted"
	ActionGCOwnerRefRemoved  = "GCOwnerRefRemoved"
	ActionGCFinalizerRemoved = "GCFinalizerRemoved"
	ActionAnomaly            = "Anomaly"
	ActionHookStarted        = "HookStarted"
	ActionHookFinished       = "HookFinished"
	ActionStatusReported     = "StatusReported"
	ActionError              = "Error"
)

// Event is one thing the Simulator did (or noticed), for test assertions and debugging.
type Event struct {
	Time      time.Time
	Component string // "credentials", "presence", "scheduler", "kubelet", "node", "faults" or "gc"
	Action    string // one of the Action constants
	Kind      string
	Namespace string
	Name      string
	Detail    string
}

// String formats the event as one log line.
func (e Event) String() string {
	return fmt.Sprintf("%s %s %s %s %s/%s: %s", e.Time.Format("15:04:05.000"), e.Component, e.Action, e.Kind, e.Namespace, e.Name, e.Detail)
}

// eventLog is a bounded, concurrency-safe record of Events plus unbounded per-action counts
// (so soak tests can count without keeping every record).
type eventLog struct {
	mu     sync.Mutex
	limit  int
	events []Event
	counts map[string]int
}

func newEventLog(limit int) *eventLog {
	return &eventLog{limit: limit, counts: map[string]int{}}
}

func (l *eventLog) add(e Event) {
	e.Time = time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[e.Action]++
	if l.limit <= 0 {
		return
	}
	if len(l.events) >= l.limit {
		// Drop the oldest quarter at once so appends stay amortised O(1).
		drop := max(l.limit/4, 1)
		l.events = append(l.events[:0], l.events[drop:]...)
	}
	l.events = append(l.events, e)
}

func (l *eventLog) snapshot() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Event(nil), l.events...)
}

func (l *eventLog) count(action string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.counts[action]
}

func (l *eventLog) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = nil
	l.counts = map[string]int{}
}

// Events returns a copy of the recorded events, oldest first.
func (s *Simulator) Events() []Event { return s.events.snapshot() }

// EventsFor returns the recorded events about the object namespace/name, oldest first.
func (s *Simulator) EventsFor(namespace, name string) []Event {
	var out []Event
	for _, e := range s.events.snapshot() {
		if e.Namespace == namespace && e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// Count returns how often action happened since the start (or the last ResetEvents), even
// when the records themselves were dropped by the event limit.
func (s *Simulator) Count(action string) int { return s.events.count(action) }

// ResetEvents forgets the recorded events and counts.
func (s *Simulator) ResetEvents() { s.events.reset() }

func (s *Simulator) record(component, action, kind, namespace, name, format string, args ...any) {
	detail := format
	if len(args) > 0 {
		detail = fmt.Sprintf(format, args...)
	}
	e := Event{Component: component, Action: action, Kind: kind, Namespace: namespace, Name: name, Detail: detail}
	s.events.add(e)
	s.log.V(1).Info(detail, "component", component, "action", action, "kind", kind, "namespace", namespace, "name", name)
}
