package wire

import (
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/exporterset/exporterset/provisioner"
)

// ProtocolVersion is the newest plugin protocol this package implements (pluginpb, package
// exporterset.provisioner.v1): version 1 is the Provisioner service, version 2 adds the
// ExternalProvisioner service. A host offers every version it speaks and go-plugin picks the
// highest one the plugin serves too, so plugins built for version 1 keep working.
const ProtocolVersion = 2

// protocolOf is the version a plugin serving impl offers at most: 2 only for an
// ExternalProvisioner.
func protocolOf(impl provisioner.Provisioner) int {
	if _, ok := impl.(provisioner.ExternalProvisioner); ok {
		return 2
	}
	return 1
}

// PluginName is the name of the provisioner plugin in go-plugin's plugin sets.
const PluginName = "provisioner"

// BinaryPrefix starts the file name of every plugin executable the host discovers, e.g.
// exporterset-provisioner-renode.
const BinaryPrefix = "exporterset-provisioner-"

// Handshake returns the go-plugin handshake of host and plugins. The magic cookie is not a
// security measure: it makes a plugin binary started by hand say what it is instead of waiting
// for a host. ProtocolVersion is left 0 because the versions come from VersionedPlugins. It is
// a function, not a variable, so that nothing can change the cookie every released plugin
// binary carries.
func Handshake() goplugin.HandshakeConfig {
	return goplugin.HandshakeConfig{
		MagicCookieKey:   "EXPORTERSET_PROVISIONER_PLUGIN",
		MagicCookieValue: "b7f4b1e2-provisioner-v1-9c1d5e0a",
	}
}

// AllowedProtocols returns gRPC only. It must be set explicitly on the host: go-plugin accepts
// only net/rpc when it is left unset, and net/rpc would need a second implementation of
// everything.
func AllowedProtocols() []goplugin.Protocol { return []goplugin.Protocol{goplugin.ProtocolGRPC} }

// VersionedPlugins returns the plugin sets per protocol version. impl is the provisioner a
// plugin serves: it offers version 2 only when impl is an ExternalProvisioner. A host passes
// nil and offers both.
func VersionedPlugins(impl provisioner.Provisioner) map[int]goplugin.PluginSet {
	sets := map[int]goplugin.PluginSet{1: {PluginName: &grpcPlugin{Impl: impl}}}
	if impl == nil || protocolOf(impl) >= 2 {
		sets[2] = goplugin.PluginSet{PluginName: &grpcPlugin{Impl: impl, external: true}}
	}
	return sets
}
