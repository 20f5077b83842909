// Package baremetal is the host-side machinery of the built-in provisioner
// qemu-baremetal.jumpstarter.dev: Jumpstarter exporters and the QEMU targets they drive, started
// on lab hosts outside the cluster over real SSH.
//
// What this step builds, one concept per file:
//
//   - parameters.go, validate.go: the class parameters (hosts, runtime, exporter, user, root,
//     credentialsSecretRef), decoded strictly with provisioner/fieldcheck into field errors
//     rooted at "parameters", as provisioner.Provisioner.Validate must return them.
//   - placement.go: Place, the pure choice of a host for a new instance (slots, arch,
//     spreading, unreachable hosts skipped), failing with a counted *NoFreeSlotError.
//   - quote.go: POSIX single-quote quoting. Every remote command goes through QuoteArgv, so no
//     parameter ever reaches a remote shell unquoted.
//   - ssh.go, knownhosts.go, errors.go: Dial with golang.org/x/crypto/ssh, the host key always
//     verified against the credentials Secret's known_hosts (there is no way to skip it), and
//     failures classified as *UnreachableError, *AuthError or *HostKeyError naming the host;
//     Client.Run with stdin, captured output and cancellation.
//   - host.go, scripts.go: Machine, the lifecycle of instances on one host. Each instance is a
//     directory root/NAMESPACE_SET/INSTANCE (0700) holding meta.json, config.yaml (0600, sent
//     on stdin because it holds the exporter's token), QEMU and the exporter each started
//     detached in its own session and process group with a pid file, a log and, once it
//     exits, its exit status (recorded by a wrapper shell that leads the group), and QEMU's QMP
//     socket. Create is idempotent, Observe tells Running, Exited (with the exit statuses,
//     quoting the logs) or Gone,
//     Stop kills both groups and removes the directory, Inventory lists the instances from
//     their metadata for orphan sweeping and adoption after a controller restart.
//   - provisioner.go: Provisioner, the provisioner.Provisioner of ProvisionerName, and a
//     provisioner.HostedProvisioner: Validate adds to the parameter checks that credentials
//     reach it (the class's spec.credentialsSecretRef set, parameters.credentialsSecretRef
//     naming the same Secret if given); RenderPod refuses, as an instance has no Pod;
//     EnrichDrivers returns the set's drivers unchanged.
//   - external.go, observe.go, reserve.go: the provisioner.ExternalProvisioner methods.
//     CreateExternal places a new instance with Place (counting each host's instances with
//     Inventory, plus this process's placements in flight), adopts one created before a
//     crash, starts it with Machine.Create and the request's ExporterConfig, and records the
//     host in AnnotationHost. ObserveExternal maps Status to provisioner.ExternalState (an
//     exporter that exited with status 0 is provisioner.ExternalExited); a host
//     that does not answer, refuses the key or fails the host key check makes its instances
//     Failed, so that they are replaced on other hosts. InventoryExternal lists the set's
//     instances on the hosts that answer; Cleanup stops an instance (or, under Retain,
//     leaves it running).
//   - conns.go: SSH connections kept across calls per host, user and credentials content,
//     checked with a keepalive before reuse, dropped when they fail, closed when idle and on
//     Provisioner.Close; a failed dial is remembered briefly so a dead host costs one timeout;
//     a command is bounded (30 s when its caller gives no deadline), so a host lost while
//     a command runs does not hold the caller until TCP gives up.
//
// Hosts need only POSIX sh, coreutils, util-linux's setsid, /proc and the QEMU binary; the
// user must be able to write under root.
//
// The controller serves it in its hosted mode: each unit is its instance's Pod, started with
// CreateExternal and the rendered config (Request.ExporterConfig), stopped with Cleanup.
// Not built yet: wiring the exporter to the QMP socket in the exporter config
// (EnrichDrivers); and a `make e2e-lab` target. The lab tests (lab_test.go,
// labprovisioner_test.go) already run the package and the Provisioner against real sshd hosts
// in network namespaces with real QEMU, and need root.
package baremetal
