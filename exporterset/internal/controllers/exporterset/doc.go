// Package exporterset is the set controller, keyed by ExporterSet: it decides how many
// instances a set has, which to retire and what each live instance gets, creates, renews,
// disables and deletes Exporters, and writes the set's status once per pass. What it decides
// for the instances reaches the instance controller through the contract Board
// (internal/contract); it imports no other controller. The front (package exporterset at the
// module's exporterset/) makes it with New and wires it.
//
// # Data flow of a pass
//
// One reconcile of one set (a pass, pass.go) runs its steps in one direction. Each step takes
// typed inputs and returns a typed result; none writes into an earlier step's data:
//
//	inputs    reconciler.go   the class, the provisioner, the selector      -> blocker
//	observe   observe.go      the set's Exporters, Pods, Secrets and Leases  -> observation
//	                          (waiting leases; bookings, pool/bookings.go)
//	reuse     quarantine.go   instances that failed their check between two -> reuseBreaker
//	                          leases quarantined (one patch each; the watch
//	                          notes transient hook failures, quarantine_watch.go)
//	request   request.go      merged parameters, images, Validate (memoized) -> blocker
//	                          external.go: the remote targets' states
//	diagnose  diagnose.go     each instance's Problem; failures and backoff -> health
//	                          (failurememory.go, pool/backoff.go)
//	status    pool/status.go  ComputeStatus (pure)                          -> Counts
//	expect    expectations.go its own creates and retirements the cache     -> observation
//	                          does not show yet (a copy; the observed one
//	                          is not changed)
//	lead      startup.go      start-ups measured (pool/leadtime.go)         -> LeadTime
//	plan      pool/plan.go    PlanScale (pure; its steps in plan_steps.go,  -> Plan
//	                          pool/roll.go, pool/deletion_order.go, the
//	                          create window pool/pacing.go)
//	act       act.go          remove and retire (retire.go), publish the    -> actResult
//	                          intents (intents.go), create, poke; record
//	                          lease uses on the Exporters (usecount.go)
//	status    conditions.go   the conditions, each a pure function of the results
//	                          (leasewait_condition.go, quarantine_status.go)
//	write     writestatus.go  one status write, only when it changed; problem events
//
// The ceiling: every Exporter of the set that exists counts against maxReplicas, those on
// their way out included. Plan.Create fits beside all of them; act runs the removals first
// and creates Plan.CreateAfterRemove more only as removals report their Exporter gone
// (retire.go's remove), so a replacement at the ceiling follows its predecessor in the same
// pass and never overlaps it.
//
// # Capacity budgets (WithCapacityBudgets)
//
// A third controller (internal/controllers/capacitybudget), keyed by CapacityBudget,
// observes the sets a budget selects (by their labels) as their own passes do, computes the
// allocation (package budget) and writes the budget's status: usage, each set's counts and
// Allowed, and the conditions.
// A governed set's pass reads Allowed as a second ceiling (pool.PlanInput.BudgetCeiling,
// budgetgov.go) and, before each batch of creates, reserves the places in the budget's
// status (internal/ledger): it counts the governed Exporters with an uncached List plus the
// reservations not yet seen as Exporters, and writes with the resourceVersion it read. So
// the limit holds across controller processes; the allocation only decides who gets the
// places. Reservations and the allocation share the budget's status, each write
// optimistic; a reservation lapses after ledger.ReservationGrace if its Exporter never came.
package exporterset
