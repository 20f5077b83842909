// Package plugin runs provisioners out of process: a third party ships a provisioner (Renode,
// Corellium, EC2, Android emulators...) as its own binary, and the controller uses it like a
// built-in one, without being forked or recompiled.
//
// # Writing a plugin
//
// A plugin author implements provisioner.Provisioner and calls Serve from main:
//
//	func main() { plugin.Serve(myProvisioner{}) }
//
// built as an executable named exporterset-provisioner-<anything> (BinaryPrefix) and dropped
// into the controller's plugin directory. provisioner/provisionertest checks an implementation,
// in process or as a built binary, with one call. examples/container-provisioner is a complete
// plugin with a README walking from `go mod init` to a running plugin.
//
// # Protocol
//
// Host and plugin talk hashicorp/go-plugin over gRPC only (AllowedProtocols; net/rpc is
// refused), after a handshake with a magic cookie (Handshake). The service is pluginpb's
// Provisioner, whose RPCs mirror the Provisioner interface. Kubernetes objects travel as the
// JSON of their API types. A provisioner error travels as a gRPC status detail with its code
// (invalid, transient, internal) and its field errors, so that the host's error has the same
// code, fields and text; a failure without an answer (the plugin died, a deadline passed) is a
// TransportError, transient for the reconciler. Plugin sets are versioned (VersionedPlugins):
// a protocol v2 will be offered next to v1 and go-plugin negotiates the highest both speak.
//
// # Debugging a plugin
//
// Run the plugin by hand, e.g. under dlv, with EXPORTERSET_PLUGIN_DEBUG=1 (EnvDebug). It
// serves without a host and prints a line such as
//
//	EXPORTERSET_REATTACH_PROVISIONERS='{"exporterset-provisioner-renode":{"Protocol":"grpc","ProtocolVersion":1,"Pid":4242,"Test":true,"Addr":{"Network":"unix","String":"/tmp/plugin123"}}}'
//
// Start the controller with that variable (EnvReattach) in its environment: the host then
// uses the running plugin instead of starting a binary (the names it serves take precedence
// over binaries in the plugin directory serving the same names) and never kills it; several
// plugins can be listed in the one JSON object. This mirrors Terraform's
// TF_REATTACH_PROVIDERS.
//
// The host side (discovery, process lifecycle, logging) is package plugin/host.
package plugin
