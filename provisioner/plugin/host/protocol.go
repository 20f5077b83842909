package host

import (
	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/plugin/internal/wire"
)

// ProtocolVersion is the newest plugin protocol version the host speaks; go-plugin picks the
// highest version both the host and a plugin serve.
const ProtocolVersion = wire.ProtocolVersion

// EnvReattach names the environment variable that makes Discover use plugins already running
// (started by hand in debug mode, typically in a debugger; see plugin.EnvDebug) instead of
// starting binaries. Its value is a JSON object of ReattachConfig by label, as printed by the
// plugin:
//
//	EXPORTERSET_REATTACH_PROVISIONERS='{"exporterset-provisioner-renode":{"Protocol":"grpc","ProtocolVersion":1,"Pid":4242,"Test":true,"Addr":{"Network":"unix","String":"/tmp/plugin123"}}}'
//
// This mirrors Terraform's TF_REATTACH_PROVIDERS.
const EnvReattach = wire.EnvReattach

// ReattachConfig is how to reach a running plugin, one entry of EnvReattach: Protocol ("grpc"),
// ProtocolVersion, Pid, Test (true for a plugin in debug mode, which the host never kills) and
// Addr (Network "unix" or "tcp", and String, the socket path or host:port). It is an alias so
// that the host parses exactly what a plugin's Serve prints.
type ReattachConfig = wire.ReattachConfig

// Info is what a plugin said about itself when it last started.
type Info struct {
	provisioner.Description
	// ProtocolVersion is the protocol version the plugin says it implements.
	ProtocolVersion int
	// SDKVersion is the version of github.com/exporterset/exporterset the plugin was built
	// with, as its build information records it; empty when unknown.
	SDKVersion string
	// External is true when the plugin negotiated protocol version 2: Provisioner then
	// returns a provisioner.ExternalProvisioner.
	External bool
}

// ReattachAddr is a ReattachConfig's address: Network ("unix" or "tcp") and String (the
// socket path or host:port).
type ReattachAddr = wire.ReattachAddr
