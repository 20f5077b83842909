package exporterset

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
)

// warning records a Warning event on the set (related may be nil).
func (r *Reconciler) warning(set, related runtime.Object, reason eventlog.Reason, action, format string, args ...any) {
	r.Recorder.Eventf(set, related, "Warning", string(reason), action, format, args...)
}

// discardRecorder is the default events.EventRecorder: events go nowhere.
type discardRecorder struct{}

func (discardRecorder) Eventf(_, _ runtime.Object, _, _, _, _ string, _ ...any) {}
