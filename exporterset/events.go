package exporterset

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
)

// EventReason is the reason of an event the reconciler records on an ExporterSet; the
// controllers' reasons are declared in one place (internal/eventlog).
type EventReason = eventlog.Reason

// warning records a Warning event on the set (related may be nil).
func (r *Reconciler) warning(set, related runtime.Object, reason EventReason, action, format string, args ...any) {
	r.recorder.Eventf(set, related, "Warning", string(reason), action, format, args...)
}
