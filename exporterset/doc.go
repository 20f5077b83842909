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
// # Data flow
//
// One reconcile of one set (a pass, pass.go) runs its steps in one direction. Each step takes
// typed inputs and returns a typed result; none writes into an earlier step's data:
//
//	inputs    reconciler.go   the class, the provisioner, the selector      -> blocker
//	request   request.go      merged parameters, images, Validate (memoized) -> blocker
//	observe   observe.go      the set's Exporters, Pods, Secrets and Leases  -> observation
//	                          (waiting leases; bookings, bookings.go)
//	lead      startup.go      start-ups measured, the lead for bookings     -> LeadTime
//	diagnose  diagnose.go     each instance's Problem; failures and backoff -> health
//	status    status.go       ComputeStatus (pure)                          -> Counts
//	plan      plan.go         PlanScale (pure; roll.go, deletion_order.go)  -> Plan
//	act       act.go          remove and retire (retire.go), create,        -> actResult
//	                          configure and start (lifecycle.go) through
//	                          the provisioner
//	status    conditions.go   four conditions, each a pure function of the results
//	write     writestatus.go  one status write, only when it changed; problem events
//
// Beside the passes, the fast path (fastpath.go) configures and starts a fresh instance the
// moment its credential appears, with the request its set's last pass prepared. Both serve
// instances already begun before new ones are begun: Exporter creates wait at a gate
// (finishfirst.go) while instances are being finished, and beyond a window of instances
// begun and not yet finished. What the
// reconciler remembers between passes lives in memory.go under one rule: nothing outlives
// the set or the instance it is about.
//
// The ceiling: every Exporter of the set that exists counts against maxReplicas, those on
// their way out included. Plan.Create fits beside all of them; act runs the removals first
// and creates Plan.CreateAfterRemove more only as removals report their Exporter gone
// (retire.go's remove), so a replacement at the ceiling follows its predecessor in the same
// pass and never overlaps it.
//
// The pure steps, ComputeStatus and PlanScale, are exported and need no API server
// (examples/whatif uses them on a pool built in memory).
package exporterset
