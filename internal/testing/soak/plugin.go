package soak

import (
	"context"
	"fmt"
	"syscall"
	"time"

	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/plugin/host"
)

// PluginProvisioner is the provisioner name served by examples/container-provisioner, the
// real plugin binary the soak runs one of its sets with.
const PluginProvisioner = "container.example.dev"

// PluginPackage is the import path of that plugin, for building it.
const PluginPackage = "github.com/exporterset/exporterset/examples/container-provisioner"

// startPlugins discovers the plugins of dir into reg, as the controller binary does. The
// restart backoff is short: the walk kills the plugin every few seconds, and with the default
// (doubling up to a minute while it keeps failing young) the set would mostly wait.
func startPlugins(ctx context.Context, dir string, reg *provisioner.Registry) (*host.Host, error) {
	h, err := host.Discover(ctx, dir, reg, host.Options{
		RestartBackoff:    100 * time.Millisecond,
		MaxRestartBackoff: time.Second,
		HealthInterval:    time.Second,
		HealthTimeout:     time.Second,
		CallTimeout:       10 * time.Second,
	})
	if err != nil {
		_ = h.Close()
		return nil, err
	}
	if _, ok := reg.Get(PluginProvisioner); !ok {
		_ = h.Close()
		return nil, fmt.Errorf("soak: no plugin in %s serves %s", dir, PluginProvisioner)
	}
	return h, nil
}

// killPlugins kills every running plugin process of h with SIGKILL, as the OOM killer or a
// crash would, and returns the pids killed.
func killPlugins(h *host.Host) ([]int, error) {
	var pids []int
	for _, p := range h.Plugins() {
		pid := p.PID()
		if pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
			return pids, fmt.Errorf("killing plugin %s (pid %d): %w", p.Label(), pid, err)
		}
		pids = append(pids, pid)
	}
	return pids, nil
}
