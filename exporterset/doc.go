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
// One reconcile reads like its data flow, each step in its own file:
// observe (observe.go: the set's objects from the cache) -> compute status (status.go, pure)
// -> plan (plan.go, pure) -> act (act.go, lifecycle.go, retire.go: create, configure, start,
// retire and recycle through the provisioner and the client) -> write status once (reconciler.go).
// The pure steps, ComputeStatus and PlanScale, are exported and need no API server.
package exporterset
