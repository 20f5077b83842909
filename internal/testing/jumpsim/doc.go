// Package jumpsim simulates the parts of a Kubernetes cluster that the ExporterSet controller
// depends on but that a test control plane (envtest: kube-apiserver and etcd only) lacks: the
// Jumpstarter core controller, a kubelet, the scheduler and the garbage collector.
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
//     while a Running, non-terminating Pod it controls exists, its exporter container runs,
//     its credential was issued, the process can register (see Registration below) and has
//     not exited after a lease. Otherwise Online=False and
//     Registered=False, exporterStatus Offline, as upstream reports an exporter that never
//     connected or went away. [Simulator.SetOffline], [Simulator.SetOnline] and
//     [Simulator.SetExporterStatus] override it for chaos tests. A physical board's process
//     runs outside the cluster: [Simulator.ConnectFromOutside] makes an Exporter connected
//     with no Pod (once its credential is issued) until [Simulator.DisconnectFromOutside].
//   - Lease scheduling, in the contract's order, with upstream's reasons and messages
//     (jumpstarter-controller b1f2bb41, lease_controller.go, reconcileStatusExporterRef):
//     a lease no Exporter can serve ends Unsatisfiable at once, decided from the cache
//     alone: [ReasonNoAccess] when no enabled Exporter matches its selector ("While there
//     are 0 exporters matching the selector, none of them are approved by any policy for
//     your client"), [ReasonAllDisabled] when some match and all are disabled (whatever
//     spec.allowDisabled says, as upstream), and for a lease pinned by spec.exporterRef
//     [ReasonExporterNotFound], [ReasonSelectorMismatch] or [ReasonExporterDisabled] (unless
//     spec.allowDisabled). A waiting lease is decided again on every pass, so it ends the
//     same way when its last Exporter goes or is disabled; Pending is left as it was.
//     Otherwise the lease stays Pending (Offline, NotAvailable, NotReady) until the first
//     free, Registered and Online Exporter by name gets it. The Exporter becomes the Lease's
//     controller owner and gets status.leaseRef. Leases end on spec.release or when
//     spec.endTime / status.beginTime+duration passes.
//
// Scheduler (part of the kubelet component): one node, [DefaultNodeName] unless
// [WithNodeName], also created as a Node object (labels kubernetes.io/arch=amd64,
// kubernetes.io/os=linux, kubernetes.io/hostname; capacity = allocatable,
// [DefaultNodeCapacity] unless [WithNodeCapacity]). A Pod is bound only when the node
// fits: its NoSchedule/NoExecute taints tolerated, nodeSelector and required node affinity
// matched, and its effective request (regular containers plus native sidecars, or the
// largest init container beside the sidecars before it, plus overhead; a limit without a
// request counts as the request) within allocatable minus the requests of the non-terminal
// Pods bound to it (a running sum, built from the cache once). Otherwise the Pod stays
// Pending with PodScheduled=False, reason Unschedulable, and kube-scheduler's message, e.g.
// "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No
// preemption victims found for incoming pod." when other Pods use what is missing; taints,
// affinity and a request beyond the node's allocatable (a KVM request on a node without the
// device plugin) end in "Preemption is not helpful for scheduling.", as the real scheduler's
// do (checked on the real-node tier). Unschedulable Pods are retried when
// resources free up, on [Simulator.SetNodeCapacity], [Simulator.SetNodeTaints] and
// [Simulator.RestoreNode], and every 10s.
//
// Kubelet (on unless [WithoutKubelet]): waits for the Secrets and ConfigMaps bound Pods
// reference ([WithoutMountChecks] turns that off), pulls images (failing as
// [Simulator.SetImagePullError] says: ErrImagePull with the registry's message, then
// ImagePullBackOff "Back-off pulling image ...: ErrImagePull: ...", Pod Pending), moves Pods
// to Running with plausible status (after [WithPodStartDelay] / [Simulator.SetPodStartDelay]),
// crashes the long-running containers of images given to [Simulator.SetCrash] (terminated
// with exit code and reason; a restartPolicy Never Pod whose regular containers all ended
// becomes Failed; a native sidecar, or a container of a restartPolicy Always Pod, goes
// through CrashLoopBackOff with a doubling back-off ([WithCrashLoopBackOff]), lastState
// and a rising restartCount while the Pod stays Running with Ready and ContainersReady
// False), completes Pods (Succeeded) when their exporter's lease ended and the exporter
// config mounted at /etc/jumpstarter/exporters says exitOnLeaseEnd: true, fails them on
// request ([Simulator.FailPod], [WithPodFailure]), evicts them ([Simulator.EvictPod]: Failed,
// reason Evicted, DisruptionTarget=True TerminationByKubelet, containers killed with 137),
// and finishes graceful deletions: the apiserver deletes unbound Pods at once but leaves a
// bound one Terminating until its kubelet reports it stopped (here: phase Failed, exit code
// 143) and deletes it with grace period 0 (after [WithPodTerminationDelay]).
//
// Node loss ([Simulator.LoseNode], [Simulator.RestoreNode]): the node's conditions turn
// Unknown ("Kubelet stopped posting node status.") and it gets the unreachable taints, as
// the node lifecycle controller does; its Running Pods get Ready=False and phase Unknown
// (reason NodeLost); the kubelet stops, so deletions stay pending; exporters there stay
// Online until last seen longer ago than [WithOnlineTimeout] (one minute, upstream's rule),
// then go Online=False ("Last seen more than 1 minute ago"). Real Kubernetes leaves the
// phase Running and, after the 300s NoExecute toleration, deletes the Pods (which stay
// Terminating until the node is back); the simulator leaves deleting to the controller.
//
// Registration: an exporter registers only when the config its Pod mounts is right for its
// Exporter (endpoint equal to status.endpoint, token equal to the current credential, so a
// rotation stops it until the config is updated, and a CA that is base64 of a PEM bundle
// unless tls.insecure; [WithoutConfigChecks] turns that off), when
// [Simulator.SetNotRegistering] does not hold, and [WithRegistrationDelay] after its Pod
// runs; otherwise it stays Registered=False and Online=False, as upstream shows an exporter
// that never connected, and [Simulator.NotRegisteringReason] tells why. A crash-looping
// native sidecar does not stop registration: the exporter has its own container.
//
// An exporter whose mounted config is unusable when its Pod starts (not YAML, or not an
// ExporterConfig of the right form: no token, a CA that is no PEM bundle, a malformed export
// entry; internal/exportercfg's checks) exits at once: its container terminates with exit
// code 1 and the message the real-node tier's stand-in exporter prints, and the Pod
// (restartPolicy Never) Fails. A config that changes under a running exporter only stops it
// registering, as above.
//
// Lease hooks: an exporter whose config has hooks (beforeLease, afterLease) runs them for
// real on this host, as upstream's exporter runs them (internal/testing/leasehook: interpreter,
// timeout, upstream's statuses and messages), each report written to exporterStatus and
// statusMessage and recorded as [ActionStatusReported]. The first report of a lease's start
// (BeforeLeaseHook, or LeaseReady "Ready for commands") and of its end (AfterLeaseHook, or
// Available "Available for new lease") is made in the write that sets or clears leaseRef,
// so the scheduler never sees the exporter Available in between. onFailure endLease after
// beforeLease releases the lease a second later (spec.release, as the controller does on the
// exporter's request) and skips the afterLease hook; after afterLease the failure shows for a
// second, then the exporter is Available. onFailure exit reports the failure and Offline;
// the process exits with code 1 once its lease is over (after afterLease: a second later):
// its container terminates (Error, the failure as the termination message, as the stand-in
// exporter writes it) and the Pod Fails (restartPolicy Never), and the Exporter stays
// Offline with its last message. Under exitOnLeaseEnd the afterLease hook runs before the
// process exits; unlike upstream's, the simulated process does not report Available for the
// second before it exits (the simulator keeps its rule that an exiting exporter is never
// seen free). On a real node ([WithRealNode]) the real exporter runs its own hooks.
//
// Every fault and its effects are recorded in [Simulator.Events].
//
// Garbage collector (on unless [WithoutGarbageCollector]): envtest has no
// kube-controller-manager, so ownerReferences never cascade there. The simulated collector
// deletes Pods, Secrets, ConfigMaps, Leases, Exporters and ExporterSets whose owners are all
// gone (or were replaced by an object with another UID), and completes foreground and orphan
// deletions (the foregroundDeletion and orphan finalizers).
//
// # What is not simulated
//
// No gRPC: nothing connects to status.endpoint; the config's endpoint, token and CA are
// compared with what the controller issued, not used. The exporter config is otherwise read
// only for exitOnLeaseEnd and the driver names (reported as status.devices). Exporters do not rewrite
// their jumpstarter.dev/* labels. There are no ExporterAccessPolicies, priorities or spot
// access, no Client objects (spec.clientRef is not checked), and lastSeen is refreshed only on
// transitions unless [WithHeartbeat] is set. Known differences of the lease scheduler from
// upstream's (b1f2bb41), none of which the pool's decisions depend on: an unassigned lease
// with spec.release ends Released here, while upstream first decides it (Unsatisfiable,
// or even assigned) and then ends it; one whose spec.endTime has passed ends Expired here,
// while upstream expires only assigned leases; a selector the API server accepts but labels
// cannot parse ends Invalid here, while upstream retries it with an error; and an Exporter
// being deleted is never online here, while upstream can still assign it. Hooks see no session (no JUMPSTARTER_HOST: `j`
// commands in a hook fail), and an afterLease hook runs whether or not a client connected
// during the lease (upstream's runs it only then). Driver configs are not checked. The scheduler knows one node, no pod affinity or
// topology spread, no priorities or preemption (its message says no victims), no volume
// binding, and only counts Pods in the namespaces the Simulator watches; Pods created with
// spec.nodeName set bypass it and are not admitted against capacity. The kubelet runs no
// probes (a started container is ready), pulls an image that is not failing at once,
// shows ErrImagePull only at the first failed pull (a real one shows it at each retry) and
// retries pulls at a constant interval ([WithImagePullBackOff]) instead of 10s doubling to
// 5m; while one regular container's image fails, the other regular containers wait in
// ContainerCreating instead of starting. Crash faults apply to long-running containers
// only, not to init containers that run to completion. No taint manager evicts bound Pods,
// there is no node pressure other than EvictPod, and Pod garbage collection of Pods on a
// lost node does not happen. There is no namespace controller: deleting a namespace leaves
// its objects (and the namespace, Terminating) in place.
//
// # Consistency
//
// Components read from the Simulator's informer cache and write with merge patches guarded by
// resourceVersion, retrying conflicts on a fresh read (an object re-created under the same
// name meanwhile is left to its own reconcile). Ending a lease as unsatisfiable is decided
// from the cache, with no live read, as upstream's lease controller decides from its
// informers: a lease created right after its Exporter ends NoAccess if the cache has not
// seen the Exporter yet, with the real core as here. Deleting an orphan (the garbage
// collector's, not the core's) is confirmed with a live read first: the cache may not have
// the just-created owner. The lease
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
