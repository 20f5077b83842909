package host

import (
	"time"

	"github.com/go-logr/logr"
)

// Options tune discovery and the plugin processes. The zero value is usable.
type Options struct {
	// Logger receives the host's messages and every plugin's stderr, with the plugin's name.
	// The zero value discards.
	Logger logr.Logger

	// Checksums pins plugin binaries: file name (e.g. exporterset-provisioner-renode) to the
	// lowercase hex SHA-256 of the file (see ParseSHA256Sums). When non-nil, a binary without
	// an entry is refused, and every start verifies the file first (go-plugin SecureConfig).
	Checksums map[string]string

	// StartTimeout bounds the start of a plugin process up to its handshake. Default 30s.
	StartTimeout time.Duration
	// CallTimeout bounds every RPC (Describe included) unless the caller's deadline is
	// earlier. Default 30s.
	CallTimeout time.Duration
	// HealthInterval is how often a running plugin is health-checked. Default 10s.
	HealthInterval time.Duration
	// HealthTimeout bounds one health check; two failures in a row restart the plugin.
	// Default 5s.
	HealthTimeout time.Duration
	// RestartBackoff is the wait before restarting a plugin that failed twice in a row; it
	// doubles with every further failure up to MaxRestartBackoff. The first restart after a
	// failure is immediate. A plugin that ran longer than MaxRestartBackoff before failing
	// starts over. Defaults 1s and 1m.
	RestartBackoff    time.Duration
	MaxRestartBackoff time.Duration
	// KillTimeout is how long a plugin gets to exit when asked before it is killed (SIGKILL).
	// Default 5s; go-plugin itself waits up to 2s for a graceful exit.
	KillTimeout time.Duration

	// Reattach lists plugins already running to use (see EnvReattach). When nil,
	// Discover reads the EXPORTERSET_REATTACH_PROVISIONERS environment variable.
	Reattach map[string]ReattachConfig
}

func (o Options) withDefaults() Options {
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.StartTimeout, 30*time.Second)
	def(&o.CallTimeout, 30*time.Second)
	def(&o.HealthInterval, 10*time.Second)
	def(&o.HealthTimeout, 5*time.Second)
	def(&o.RestartBackoff, time.Second)
	def(&o.MaxRestartBackoff, time.Minute)
	def(&o.KillTimeout, 5*time.Second)
	return o
}
