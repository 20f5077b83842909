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
//     detached in its own session and process group with a pid file and a log, and QEMU's QMP
//     socket. Create is idempotent, Observe tells Running, Exited (quoting the logs) or Gone,
//     Stop kills both groups and removes the directory, Inventory lists the instances from
//     their metadata for orphan sweeping and adoption after a controller restart.
//
// Hosts need only POSIX sh, coreutils, util-linux's setsid, /proc and the QEMU binary; the
// user must be able to write under root.
//
// Not built yet: the provisioner.Provisioner / provisioner.ExternalProvisioner glue (Describe,
// Validate, CreateExternal mapping Place + Machine.Create, ObserveExternal mapping Status to
// provisioner.ExternalState, InventoryExternal, Cleanup) and its registration; the
// reconciler's Pod-less mode (an instance here has no Pod: RenderPod has nothing to render);
// wiring the exporter to the QMP socket in the exporter config (EnrichDrivers); keeping SSH
// connections across reconciles; and a `make e2e-lab` target. The lab test (lab_test.go)
// already starts real sshd hosts in network namespaces and needs root.
package baremetal
