// Package exporterset is the ExporterSet reconciler's front: it keeps a warm pool of Jumpstarter
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
//   - the set controller (internal/controllers/exporterset), keyed by ExporterSet, decides how many instances
//     there are, which to retire and what each live instance gets, and writes the set's
//     status. It creates, renews (renew.go), disables and deletes Exporters, writes their
//     use-count and idle annotations (usecount.go), observes external targets and cleans
//     them up on the way out, dropping the external-cleanup finalizer (external.go), and
//     reserves places in CapacityBudgets (the ledger in their status, internal/ledger),
//     which the budget controller also writes;
//   - the instance controller (internal/controllers/instance), keyed by Exporter, is the
//     only creator of an instance's external target (with its finalizer and record on the
//     Exporter) and the only writer of its config Secret and Pods (and of the label on its
//     credential Secret). It acts with what its set's last pass decided: on the target at
//     once, on the rest as soon as the Exporter has its credential. It is a package of its
//     own and imports no other controller.
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
//   - exporterset (this package): the front. NewReconciler makes the controllers from the
//     options, SetupWithManager wires them; CacheOptions, the gate, the annotations users set
//     and the RBAC markers. It holds no reconcile of its own.
//   - exporterset/internal/controllers/exporterset: the set controller: a pass's data flow,
//     the ceiling and the budgets' part are told in its package documentation.
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
//     sees the sets through the SetView the front gives it (the set controller's BudgetSet)
//     and imports no other controller.
//   - exporterset/internal/ledger: a budget's count of what its sets hold and the
//     reservation before a create, shared by the set and budget controllers.
//   - exporterset/internal/objects: what the controllers share about the objects they watch:
//     the Exporter-changed predicate, instance names and labels, well-known names.
//   - exporterset/internal/metrics: the Prometheus series and the lease SLO bookkeeping.
//   - exporterset/internal/fixture: instances built in memory for the pure tests.
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
// The pure steps live in exporterset/pool and exporterset/budget and need no API server
// (examples/whatif uses them on a pool built in memory).
package exporterset
