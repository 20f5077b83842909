// Package plugin is the SDK of out-of-process provisioners: a third party ships a provisioner
// (Renode, Corellium, EC2, Android emulators...) as its own binary, and the controller uses it
// like a built-in one, without being forked or recompiled.
//
// # Writing a plugin
//
// A plugin author implements provisioner.Provisioner (package provisioner has the types, the
// errors and AddExporterContainer, which adds the exporter to a Pod) and calls Serve from
// main:
//
//	func main() {
//		if err := plugin.Serve(myProvisioner{}); err != nil {
//			log.Fatal(err)
//		}
//	}
//
// built as an executable named exporterset-provisioner-<anything> (BinaryPrefix) and dropped
// into the controller's plugin directory. provisioner/provisionertest checks an implementation,
// in process or as a built binary, with one call. examples/container-provisioner is a complete
// plugin with a README walking from `go mod init` to a running plugin.
//
// # Data flow
//
// The controller's host (package plugin/host) starts the binary; Serve answers go-plugin's
// handshake (a magic cookie, then the protocol version: go-plugin picks the highest one both
// sides speak) and serves p over gRPC only, on a Unix socket with mutual TLS. Each call of the
// reconciler becomes one RPC whose Request carries the set, the class and the Exporter as the
// JSON of their API types; the Pod and drivers come back the same way. A provisioner error
// travels as a gRPC status detail with its code (invalid, transient, internal) and its field
// errors, so that the controller sees the same code, fields and text as from a built-in
// provisioner. The protocol's Go side is internal to this module: a plugin links only Serve.
//
// # Warnings
//
// A provisioner that implements provisioner.WarningValidator (things a person should look at
// that do not block the set, such as an unknown third-party driver type) has its warnings
// carried by the Warnings RPC and shown as DriverWarning events, as a built-in's are. A
// plugin built before that RPC existed answers Unimplemented, which the host takes as no
// warnings.
//
// # Targets outside the Pod
//
// A provisioner whose instances own resources outside their Pod (a VM on a remote cluster)
// implements provisioner.ExternalProvisioner as well. Serve sees it and offers protocol
// version 2 (the ExternalProvisioner service beside the version-1 Provisioner service); the
// host then hands the reconciler a provisioner with the capability. A plugin without it
// offers version 1 only, exactly as plugins built before version 2 existed, which keep
// working. The plugin needs no credentials or RBAC of its own: with each external call (and
// Cleanup) the host passes Request.Credentials, the data of the class's
// spec.credentialsSecretRef Secret, which only the controller reads.
//
// # Debugging a plugin
//
// Run the plugin by hand, e.g. under dlv, with EXPORTERSET_PLUGIN_DEBUG=1 (EnvDebug), or call
// Serve with WithDebug. It serves without a host and prints a line such as
//
//	EXPORTERSET_REATTACH_PROVISIONERS='{"exporterset-provisioner-renode":{"Protocol":"grpc","ProtocolVersion":1,"Pid":4242,"Test":true,"Addr":{"Network":"unix","String":"/tmp/plugin123"}}}'
//
// Start the controller with that variable in its environment: the host then uses the running
// plugin instead of starting a binary (the names it serves take precedence over binaries in
// the plugin directory serving the same names) and never kills it; several plugins can be
// listed in the one JSON object. This mirrors Terraform's TF_REATTACH_PROVIDERS.
package plugin
