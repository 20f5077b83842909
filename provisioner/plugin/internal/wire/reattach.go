package wire

import (
	"encoding/json"
	"fmt"
	"net"
	"sort"

	goplugin "github.com/hashicorp/go-plugin"
)

// EnvReattach names the environment variable that makes the host use plugins already running
// (started by hand, typically in a debugger) instead of starting binaries. Its value is a JSON
// object of ReattachConfig by label, as printed by a plugin in debug mode (plugin.EnvDebug):
//
//	EXPORTERSET_REATTACH_PROVISIONERS='{"exporterset-provisioner-renode":{"Protocol":"grpc","ProtocolVersion":1,"Pid":4242,"Test":true,"Addr":{"Network":"unix","String":"/tmp/plugin123"}}}'
const EnvReattach = "EXPORTERSET_REATTACH_PROVISIONERS"

// ReattachConfig is how to reach a running plugin: go-plugin's ReattachConfig in a form that
// survives JSON (go-plugin's holds a net.Addr interface).
type ReattachConfig struct {
	// Protocol must be "grpc".
	Protocol string
	// ProtocolVersion is the plugin protocol version the plugin serves.
	ProtocolVersion int
	// Pid is the plugin's process id.
	Pid int
	// Test is true for a plugin in debug mode: the host then never kills it.
	Test bool
	// Addr is where the plugin listens.
	Addr ReattachAddr
}

// ReattachAddr is a net.Addr as JSON.
type ReattachAddr struct {
	// Network is "unix" or "tcp".
	Network string
	// String is the socket path or host:port.
	String string
}

// NewReattachConfig converts go-plugin's form.
func NewReattachConfig(rc *goplugin.ReattachConfig) ReattachConfig {
	out := ReattachConfig{
		Protocol:        string(rc.Protocol),
		ProtocolVersion: rc.ProtocolVersion,
		Pid:             rc.Pid,
		Test:            rc.Test,
	}
	if rc.Addr != nil {
		out.Addr = ReattachAddr{Network: rc.Addr.Network(), String: rc.Addr.String()}
	}
	return out
}

// GoPlugin converts to go-plugin's form, refusing what the host does not speak: go-plugin
// checks neither the protocol nor the version when it reattaches.
func (r ReattachConfig) GoPlugin() (*goplugin.ReattachConfig, error) {
	if r.Protocol != string(goplugin.ProtocolGRPC) {
		return nil, fmt.Errorf("protocol %q is not supported, want %q", r.Protocol, goplugin.ProtocolGRPC)
	}
	if _, ok := VersionedPlugins(nil)[r.ProtocolVersion]; !ok {
		return nil, fmt.Errorf("plugin protocol version %d is not supported (this host speaks %d)", r.ProtocolVersion, ProtocolVersion)
	}
	var addr net.Addr
	var err error
	switch r.Addr.Network {
	case "unix":
		addr, err = net.ResolveUnixAddr("unix", r.Addr.String)
	case "tcp":
		addr, err = net.ResolveTCPAddr("tcp", r.Addr.String)
	default:
		err = fmt.Errorf("network %q is not unix or tcp", r.Addr.Network)
	}
	if err != nil {
		return nil, fmt.Errorf("address: %w", err)
	}
	return &goplugin.ReattachConfig{
		Protocol:        goplugin.Protocol(r.Protocol),
		ProtocolVersion: r.ProtocolVersion,
		Addr:            addr,
		Pid:             r.Pid,
		Test:            r.Test,
	}, nil
}

// ParseReattachConfigs parses the value of EnvReattach; an empty value is no plugin.
func ParseReattachConfigs(s string) (map[string]ReattachConfig, error) {
	if s == "" {
		return nil, nil
	}
	var out map[string]ReattachConfig
	if err := json.Unmarshal([]byte(s), &out); err != nil {
		return nil, fmt.Errorf("%s: %w", EnvReattach, err)
	}
	labels := make([]string, 0, len(out))
	for label := range out {
		labels = append(labels, label)
	}
	sort.Strings(labels)
	for _, label := range labels {
		if _, err := out[label].GoPlugin(); err != nil {
			return nil, fmt.Errorf("%s: plugin %q: %w", EnvReattach, label, err)
		}
	}
	return out, nil
}

// FormatReattachConfigs returns the value of EnvReattach for these plugins.
func FormatReattachConfigs(m map[string]ReattachConfig) (string, error) {
	b, err := json.Marshal(m) // map keys are sorted: the same plugins give the same line
	return string(b), err
}
