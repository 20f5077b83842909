package soak

// The invariants, by the name violations print.
const (
	// InvLeasedDisabled: the controller disabled (retiring annotation) an Exporter whose
	// status.leaseRef named a lease.
	InvLeasedDisabled = "leased-exporter-disabled-by-controller"
	// InvLeasedDeleted: an Exporter was deleted while its status.leaseRef named a lease.
	InvLeasedDeleted = "leased-exporter-deleted"
	// InvLeaseLost: an Exporter was deleted while a Lease that had not ended was assigned to
	// it (Lease status.exporterRef), its leaseRef not written yet.
	InvLeaseLost = "lease-lost-its-exporter"
	// InvDeletedUnretired: an Exporter was deleted that was neither retiring nor exited.
	InvDeletedUnretired = "exporter-deleted-without-retirement-or-exit"
	// InvOverCeiling: more instances than maxReplicas that are not being recycled.
	InvOverCeiling = "replicas-over-max-beyond-recycling"
	// InvWatchedOverCeiling: an Exporter joined its set while the set already had
	// maxReplicas Exporters, counted from the Exporter watch (ADDED until DELETED), those
	// being deleted, retiring or exited included (ceilingwatch.go).
	InvWatchedOverCeiling = "exporters-over-max-counted-from-watch"
	// InvStaysAbove: a set stayed above maxReplicas for longer than the grace.
	InvStaysAbove = "replicas-stay-above-max"
	// InvAvailableStatus: a status says Available=True for the set's generation while its
	// own counters break the floor, the buffer or the empty-pool rule.
	InvAvailableStatus = "available-true-contradicts-status"
	// InvAvailableLive: a status has said Available=True for longer than a grace while the
	// objects (recomputed by the checker) broke the floor or the buffer.
	InvAvailableLive = "available-true-while-pool-short"
	// InvChurn: a set the walk keeps failing created more instances in a window than its
	// failure backoff allows.
	InvChurn = "churn-beyond-backoff-while-failing"
	// InvRollFloor: the controller retired an available instance of an outdated spec (a
	// roll) and left fewer available instances than min(level, available before), level
	// being max(minAvailableReplicas, minReplicas - leased), beyond the one-at-a-time step
	// at a full ceiling (rollfloor.go).
	InvRollFloor = "roll-retired-below-availability-floor"
	// InvLeaseToQuarantined: a Lease was assigned to an Exporter after the set had
	// quarantined it (marked and disabled, not enabled again by a person), beyond the
	// scheduler's cache race (quarantinewatch.go).
	InvLeaseToQuarantined = "lease-assigned-to-quarantined-instance"
	// InvQuarantineEnabled: the set marked an Exporter quarantined without disabling it in
	// the same write.
	InvQuarantineEnabled = "quarantine-mark-without-disable"
	// InvBudgetExceeded: an Exporter joined a set a CapacityBudget governs while the governed
	// sets already had limits.instances Exporters, counted from the Exporter watch (ADDED
	// until DELETED, any state), beyond the highest limit of the last budgetLimitWindow
	// (budgetwatch.go).
	InvBudgetExceeded = "budget-exceeded-counted-from-watch"
	// InvBudgetStarved: a Lease waited for a governed set, longer than CeilingOptions.Starve,
	// while the budget was full and another governed set without demand held idle
	// instances above its minReplicas (budgetstarve.go).
	InvBudgetStarved = "waiting-lease-starved-beside-idle-spares"
	// InvLeaseRefused: a Lease whose selector matches a set's instances ended Unsatisfiable
	// (NoAccess: no enabled Exporter matched; AllDisabled: every match disabled) while the
	// set had room: not being deleted, its class present and its provisioner served, no
	// CapacityBudget and no hand-disabled Exporters holding it at 0, and not just created
	// or changed by the soak (refusewatch.go).
	InvLeaseRefused = "lease-unsatisfiable-while-set-has-room"
	// InvFinal: the final invariants did not hold within the settle time after the walk.
	InvFinal = "not-converged-after-walk"
	// InvInjected: the self-test's fake violation.
	InvInjected = "injected-for-self-test"
)
