// Package jumpsim simulates the parts of a Kubernetes cluster that the ExporterSet controller
// depends on but that a test control plane (envtest: kube-apiserver and etcd only) lacks: the
// Jumpstarter core controller, a kubelet and the garbage collector.
//
// It follows the Jumpstarter contract (docs: shared/reference/jumpstarter-contract.md, §2–§4).
// Everything it does goes through the apiserver, with its own manager and informer cache, so
// the controller under test observes it exactly as it would observe the real components and
// can be restarted independently of it.
//
// # What is simulated
//
// Jumpstarter controller (on unless [WithoutController]):
//   - Credentials: an Exporter without status.credential gets a Secret "<exporter>-token"
//     (controller-owned by the Exporter, key "token", a token derived from the Exporter's
//     namespace, name, UID and rotation count) and status.credential/status.endpoint.
//     Issue can be delayed ([WithCredentialDelay]) or paused ([Simulator.PauseCredentials]);
//     [Simulator.RotateToken] rewrites the token in place.
//   - Presence (the exporter process, seen through the controller): an Exporter is
//     Registered=True and Online=True, exporterStatus Available (LeaseReady while leased),
//     while a Running, non-terminating Pod it controls exists, its credential was issued and
//     the process in the Pod has not exited after a lease. Otherwise Online=False and
//     Registered=False, exporterStatus Offline, as upstream reports an exporter that never
//     connected or went away. [Simulator.SetOffline], [Simulator.SetOnline] and
//     [Simulator.SetExporterStatus] override it for chaos tests.
//   - Lease scheduling, in the contract's order: unsatisfiable leases (no enabled Exporter
//     matches) end at once; otherwise the lease stays Pending (Offline, NotAvailable,
//     NotReady) until the first free, Registered and Online Exporter by name gets it. The
//     Exporter becomes the Lease's controller owner and gets status.leaseRef. Leases end on
//     spec.release or when spec.endTime / status.beginTime+duration passes.
//
// Kubelet (on unless [WithoutKubelet]): binds Pods to a fake node, waits for the Secrets
// and ConfigMaps they reference ([WithoutMountChecks] turns that off), moves them to Running
// with plausible status (after [WithPodStartDelay]), completes them (Succeeded) when their
// exporter's lease ended and the exporter config mounted at /etc/jumpstarter/exporters says
// exitOnLeaseEnd: true, fails them on request ([Simulator.FailPod], [WithPodFailure]), and
// finishes graceful deletions: the apiserver deletes unbound Pods at once but leaves a bound
// one Terminating until its kubelet reports it stopped (here: phase Failed, exit code 143)
// and deletes it with grace period 0 (after [WithPodTerminationDelay]).
//
// Garbage collector (on unless [WithoutGarbageCollector]): envtest has no
// kube-controller-manager, so ownerReferences never cascade there. The simulated collector
// deletes Pods, Secrets, ConfigMaps, Leases, Exporters and ExporterSets whose owners are all
// gone (or were replaced by an object with another UID), and completes foreground and orphan
// deletions (the foregroundDeletion and orphan finalizers).
//
// # What is not simulated
//
// No gRPC: nothing connects to status.endpoint and the token is never verified; an exporter
// is "connected" exactly when its Pod runs. The exporter config is read only for
// exitOnLeaseEnd and the driver names (reported as status.devices). Exporters do not rewrite
// their jumpstarter.dev/* labels. There are no ExporterAccessPolicies, priorities or spot
// access, no Client objects (spec.clientRef is not checked), no lease hooks beyond an
// optional AfterLeaseHook pause ([WithAfterLeaseDelay]), and lastSeen is refreshed only on
// transitions unless [WithHeartbeat] is set. The kubelet ignores scheduling constraints,
// resources, probes, images and restarts other than an exporter exiting under
// restartPolicy Always. There is no namespace controller: deleting a namespace leaves its
// objects (and the namespace, Terminating) in place.
//
// # Consistency
//
// Components read from the Simulator's informer cache and write with merge patches guarded by
// resourceVersion, retrying conflicts on a fresh read (an object re-created under the same
// name meanwhile is left to its own reconcile). Irreversible steps are confirmed with a live
// read first: ending a lease as unsatisfiable (the cache may not have the just-created
// Exporter yet) and deleting an orphan (it may not have the just-created owner). The lease
// scheduler reserves an Exporter in memory before writing the assignment, and also counts an
// Exporter as leased when the cache shows it leased, so concurrent workers and a lagging
// cache can delay an assignment but never double it. Run one Simulator per namespace at a
// time: two would not see each other's reservations.
//
// # Use
//
//	sim, err := jumpsim.New(env.Config, jumpsim.WithNamespaces(ns))
//	if err != nil { ... }
//	if err := sim.Start(ctx); err != nil { ... } // returns once the caches are synced
//	defer sim.Stop()
//
// Start does not block; Stop cancels and waits. A Simulator runs once: to simulate a restart,
// Stop it and start a new one (all its state that matters is in the apiserver).
package jumpsim
