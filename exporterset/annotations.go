package exporterset

import setcontroller "github.com/exporterset/exporterset/exporterset/internal/controllers/exporterset"

// Annotations users set on an ExporterSet (or its class) to tune its reuse policy
// (docs/annotations.md), and their defaults.
const (
	// AnnotationQuarantineTTL is how long a quarantined instance is kept for inspection
	// before it is removed (a duration such as 30m).
	AnnotationQuarantineTTL = setcontroller.AnnotationQuarantineTTL
	// AnnotationMaxQuarantined is how many quarantined instances a set keeps at most; older
	// ones are removed first.
	AnnotationMaxQuarantined = setcontroller.AnnotationMaxQuarantined
	// AnnotationMaxUseCount retires an instance under InPlaceReuse after it has served that
	// many leases (0 or absent: no limit).
	AnnotationMaxUseCount = setcontroller.AnnotationMaxUseCount
	// AnnotationMaxIdleAge replaces an instance that has been ready and unleased for longer
	// than this duration (absent: never).
	AnnotationMaxIdleAge = setcontroller.AnnotationMaxIdleAge
	// DefaultQuarantineTTL is AnnotationQuarantineTTL's default.
	DefaultQuarantineTTL = setcontroller.DefaultQuarantineTTL
	// DefaultMaxQuarantined is AnnotationMaxQuarantined's default.
	DefaultMaxQuarantined = setcontroller.DefaultMaxQuarantined
)

// AnnotationBookingLeadTime on an ExporterSet overrides its learned lead time for bookings:
// a Go duration such as "90s" or "5m".
const AnnotationBookingLeadTime = setcontroller.AnnotationBookingLeadTime

// DefaultBookingLeadTime is the lead time of a set none of whose start-ups has been
// measured yet.
const DefaultBookingLeadTime = setcontroller.DefaultBookingLeadTime

// AnnotationHardwareSelector on an ExporterSet (or its class; the set's wins) is a label
// selector in `kubectl -l` form naming physical boards whose free ones count toward the
// set's warm buffer (docs/hardware-first.md).
const AnnotationHardwareSelector = setcontroller.AnnotationHardwareSelector

// Annotations and the finalizer the controller writes on Exporters.
const (
	// AnnotationClass records on an external instance's Exporter the class it was created
	// with: once its set is gone, the class names the provisioner, its parameters and
	// credentials.
	AnnotationClass = setcontroller.AnnotationClass
	// AnnotationExternalRecorded marks an Exporter whose external resources were created
	// and whose CreateExternal annotations are recorded beside it.
	AnnotationExternalRecorded = setcontroller.AnnotationExternalRecorded
	// AnnotationRequests is written on each Exporter a budgeted set creates: its instance's
	// Pod requests as the provisioner rendered them (JSON), so that every controller counts
	// a budget's resources from the Exporters alone.
	AnnotationRequests = setcontroller.AnnotationRequests
	// FinalizerExternal holds an Exporter of an external provisioner until its remote
	// resources are cleaned up.
	FinalizerExternal = setcontroller.FinalizerExternal
)

// Timing defaults (the tests' WithTuning shortens them).
const (
	// DefaultFailureBackoffBase is the wait before the first replacement after a failure;
	// each further consecutive failure doubles it, up to DefaultFailureBackoffCap.
	DefaultFailureBackoffBase = setcontroller.DefaultFailureBackoffBase
	// DefaultFailureBackoffCap bounds the failure backoff.
	DefaultFailureBackoffCap = setcontroller.DefaultFailureBackoffCap
	// DefaultInventoryInterval is how often, at most, a set's external inventory is swept.
	DefaultInventoryInterval = setcontroller.DefaultInventoryInterval
	// DefaultRegistrationGrace is how long an exporter may run before "not registered" is a
	// problem.
	DefaultRegistrationGrace = setcontroller.DefaultRegistrationGrace
	// DefaultStartupDeadline is a class's startupDeadline when it sets none.
	DefaultStartupDeadline = setcontroller.DefaultStartupDeadline
)

// StepKey is the log key that names a step of a set's first instance (docs/e2e.md).
const StepKey = setcontroller.StepKey
