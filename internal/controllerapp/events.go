package controllerapp

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// coreEvents records the reconciler's events through the core/v1 Events API. Upstream's
// operator grants its exporter-set controller events in the core group only (contract §2b);
// the events.k8s.io recorder was forbidden there. Both APIs show the same events.
type coreEvents struct{ rec record.EventRecorder }

// Eventf records on regarding; action and related have no place in a core/v1 event and are
// dropped (the note names the instance already).
func (c coreEvents) Eventf(regarding runtime.Object, _ runtime.Object, eventtype, reason, _ string, note string, args ...any) {
	c.rec.Eventf(regarding, eventtype, reason, note, args...)
}
