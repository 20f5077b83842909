// Package exporterset is the ExporterSet reconciler: it keeps a warm pool of Jumpstarter
// Exporters, each with its config Secret and a Pod rendered by a Provisioner, between the
// set's floor (minReplicas), ceiling (maxReplicas) and warm buffer (minAvailableReplicas),
// grown by waiting Leases and shrunk after a scale-down cooldown.
//
// It embeds into any controller-runtime manager:
//
//	mgr, _ := ctrl.NewManager(cfg, ctrl.Options{Cache: exporterset.CacheOptions()})
//	r := exporterset.NewReconciler(mgr.GetClient(), mgr.GetAPIReader(), registry)
//	_ = r.SetupWithManager(mgr)
//
// # Two controllers: the set decides, the instance builds
//
// SetupWithManager registers two controllers (three with CapacityBudgets), split as cluster-api splits MachineSet from
// Machine. Each object has one writer:
//
//   - the set reconciler (reconciler.go), keyed by ExporterSet, decides how many instances
//     there are, which to retire and what each live instance gets, and writes the set's
//     status. It creates, renews (renew.go), disables and deletes Exporters, writes their
//     use-count and idle annotations (usecount.go) and the external-cleanup finalizer, creates
//     external targets (external.go), and reserves places in CapacityBudgets (the ledger in
//     their status, internal/ledger), which the budget controller also writes;
//   - the instance controller (internal/controllers/instance), keyed by Exporter, is the
//     only writer of an instance's config Secret and Pods (and of the label on its
//     credential Secret). It acts as soon as the Exporter has its credential, with what its
//     set's last pass decided. It is a package of its own and imports no other controller.
//
// Decisions flow one way, from the set to its instances, through one record per set
// (contract.Intents, made in intents.go) that the pass replaces whole on the contract Board
// and the instance controller only reads; the pass pokes the instances whose inputs changed.
// What building an instance met (a missing credential, an invalid Pod) flows back as a
// contract.Result that the set's next pass turns into conditions. Concurrency comes from the
// two workqueues, each serialising its keys; the only state the two share is the Board and
// the CA reader (internal/cabundle), memos of the one internal/state Memory. Creates are
// paced by one pure mechanism, a window on the instances begun and not yet finished that
// grows as they finish (pool.CreateRoom), so the first instances are finished before the
// bulk is begun.
//
// # Packages
//
//   - exporterset (this package): the front (NewReconciler, options, SetupWithManager) and,
//     for now, the set reconciler, what it reads and writes, and what it remembers between
//     passes.
//   - exporterset/internal/controllers/instance: the instance controller.
//   - exporterset/internal/contract: what the set and instance controllers share (Intents,
//     Result, the Board).
//   - exporterset/internal/state: the memos, registered in one Memory (one forget, one sweep).
//   - exporterset/internal/eventlog: the event reasons and the per-pass batch.
//   - exporterset/internal/cabundle: the CA bundle reader both controllers use.
//   - exporterset/pool: the pool math, pure and exported for embedders: the read-only
//     Instance view and its Problems, ComputeStatus, PlanScale with rolls and the deletion
//     order, bookings, the failure backoff, the lead-time log and the create window. It
//     imports no client and no clock.
//   - exporterset/budget: a CapacityBudget's allocation, pure and exported: floors, then
//     waiting and booked demand (reclaiming idle spares from sets without demand), then
//     warm buffers; and the Pod requests a budget counts.
//   - exporterset/internal/controllers/capacitybudget: the CapacityBudget controller. It
//     sees the sets through the SetView this package gives it (budgetview.go) and imports no
//     other controller.
//   - exporterset/internal/ledger: a budget's count of what its sets hold and the
//     reservation before a create, shared by the set and budget controllers.
//   - exporterset/internal/objects: what the controllers share about the objects they watch:
//     the Exporter-changed predicate, instance names and labels, well-known names.
//   - exporterset/internal/metrics: the Prometheus series and the lease SLO bookkeeping.
//   - exporterset/internal/fixture: instances built in memory for the pure tests.
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
// The instance controller's steps (internal/controllers/instance): the Exporter, its set
// and class from the cache, and the set's Intents from the Board; its Pods (read by the
// index of their controller's UID) and Secrets; restart Pods when decided; its config Secret
// and Pod (through the provisioner; when a Pod starts is one rule, contract.StartsPod); its
// Result recorded. It is queued by its Exporter's credential, enabled flag and labels, by a
// poke from the set's pass, and by updates and deletes of the Pods and Secrets it owns, not
// their creates: it made them. What the controllers remember are memos of one
// internal/state Memory (memory.go lists the set controller's: the expectations, the
// failure count and backoff, the status fields upstream's CRD prunes, the start-up samples,
// the metrics' bookkeeping and the caches), under one rule: nothing outlives the set or the
// instance it is about. A set's deletion has one forget, a pass one sweep of the instances
// it no longer sees.
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
//
// The pure steps live in exporterset/pool and exporterset/budget and need no API server
// (examples/whatif uses them on a pool built in memory).
package exporterset
