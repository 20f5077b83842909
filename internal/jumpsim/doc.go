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
// and ConfigMaps they reference, moves them to Running with plausible status, completes
// them (Succeeded) when their exporter's lease ended and the mounted exporter config says
// exitOnLeaseEnd: true, fails them on request ([Simulator.FailPod], [WithPodFailure]), and
// finishes graceful deletions, which the apiserver leaves to a kubelet for bound Pods.
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
