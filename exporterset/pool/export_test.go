package pool

import "time"

// The internals the external tests (package pool_test) look at.
const (
	InitialWindow  = initialWindow
	WindowGrowth   = windowGrowth
	LeadMarginMin  = leadMarginMin
	StartupSamples = startupSamples
	StartupFresh   = startupFresh
)

// MeasureStartup is measureStartup.
var MeasureStartup = measureStartup

// Samples are the start-up times the log keeps.
func (l StartupLog) Samples() []time.Duration { return l.samples }
