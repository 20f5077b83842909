package exporterset

import (
	"sync"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// EventUpstreamCRD: the installed ExporterSet CRD is upstream Jumpstarter's, whose status
// schema lacks fields of ours; recorded once per process on the first set acted on
// (WithStartupNotice).
const EventUpstreamCRD EventReason = "UpstreamCRD"

// startupNotice is a Warning event recorded once per process, on the first set the
// reconciler acts on (past the gate): a fact about the installation found at start belongs
// where people look, on their sets, as well as in the log.
type startupNotice struct {
	reason EventReason
	note   string
	once   sync.Once
}

// WithStartupNotice makes the reconciler record a Warning event with reason and note on the
// first set it acts on, once per process. The controller process uses it to say that the
// installed ExporterSet CRD is upstream's (EventUpstreamCRD).
func WithStartupNotice(reason EventReason, note string) Option {
	return func(r *Reconciler) { r.notice = &startupNotice{reason: reason, note: note} }
}

// noticeOnce records the startup notice on set, the first time only.
func (r *Reconciler) noticeOnce(set *vtv1alpha1.ExporterSet) {
	if r.notice == nil {
		return
	}
	r.notice.once.Do(func() {
		r.recorder.Eventf(set, nil, "Warning", string(r.notice.reason), "Start", "%s", r.notice.note)
	})
}
