package exporterset

import "github.com/exporterset/exporterset/exporterset/internal/eventlog"

// EventReason is the reason of an event the reconciler records on an ExporterSet; the
// controllers' reasons are declared in one place (internal/eventlog).
type EventReason = eventlog.Reason
