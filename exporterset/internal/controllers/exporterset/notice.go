package exporterset

import (
	"sync"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
)

// Notice is a Warning event recorded once per process, on the first set the reconciler
// acts on (past the gate): a fact about the installation found at start belongs where
// people look, on their sets, as well as in the log.
type Notice struct {
	Reason eventlog.Reason
	Note   string
	once   sync.Once
}

// noticeOnce records the startup notice on set, the first time only.
func (r *Reconciler) noticeOnce(set *vtv1alpha1.ExporterSet) {
	if r.Notice == nil {
		return
	}
	r.Notice.once.Do(func() {
		r.Recorder.Eventf(set, nil, "Warning", string(r.Notice.Reason), "Start", "%s", r.Notice.Note)
	})
}
