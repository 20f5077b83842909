// Package soak is the chaos soak of the ExporterSet reconciler: a seeded, time-bounded random
// walk over a real API server (envtest) with the Jumpstarter simulator (internal/jumpsim),
// while a Checker watches the namespace and records the first broken invariant.
//
// The walk ([Walk]) takes and releases leases, fails and deletes Pods, flips Exporters
// offline and back, disables and re-enables Exporters by hand (without the reconciler's
// retiring annotation), edits minReplicas, maxReplicas, minAvailableReplicas, the cooldown
// and the template of the sets and the parameters and binding mode of their classes, gives
// classes invalid parameters for a while, deletes and re-creates classes, restarts the
// controller's manager, makes a fraction of the reconciler's API calls fail with 409, 429 or
// 500 ([Faults]), makes the fake provisioner fail, and kills (SIGKILL) the process of a real
// provisioner plugin (examples/container-provisioner) that one set runs on.
//
// The [Checker] judges, on every watch event:
//   - no Exporter holding a lease is disabled (retiring annotation) or deleted by the
//     controller, and no Lease is left assigned to a deleted Exporter;
//   - no Exporter is deleted unless it was retiring or its exporter had exited;
//
// and a few times a second:
//   - the instances not being recycled never exceed maxReplicas (beyond leased or
//     hand-disabled ones, which cannot be retired), and a set never stays above maxReplicas
//     for long except while it cannot act (class gone, controller down...).
//
// After the walk every fault is turned off and, within a bounded time, the status of every
// set must equal a recomputation from the objects, the warm buffer and the floor must be met
// where the ceiling allows, nothing may still be recycling, and no Pod, Secret or Exporter
// may be orphaned ([Checker.Final]).
//
// Run it with `make soak` (SOAK_DURATION, default 2m, split between seed 1 and a random seed;
// `make soak DURATION=30m` for a long run, `SOAK_SEED=n` to replay one seed). `go test ./...`
// runs the short default. A failure prints the seed, the violations and the event history.
package soak
