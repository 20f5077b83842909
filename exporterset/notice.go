package exporterset

import setcontroller "github.com/exporterset/exporterset/exporterset/internal/controllers/exporterset"

// EventUpstreamCRD: the installed ExporterSet CRD is upstream Jumpstarter's, whose status
// schema lacks fields of ours; recorded once per process on the first set acted on
// (WithStartupNotice).
const EventUpstreamCRD EventReason = "UpstreamCRD"

// WithStartupNotice makes the reconciler record a Warning event with reason and note on the
// first set it acts on, once per process. The controller process uses it to say that the
// installed ExporterSet CRD is upstream's (EventUpstreamCRD).
func WithStartupNotice(reason EventReason, note string) Option {
	return func(o *options) { o.set.Notice = &setcontroller.Notice{Reason: reason, Note: note} }
}
