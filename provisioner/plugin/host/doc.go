// Package host runs provisioner plugins for the controller: it discovers plugin binaries in a
// directory, starts them, registers the provisioner names they serve, and keeps them running.
//
// Typical use in the controller's main:
//
//	reg := provisioner.NewRegistry()
//	_ = reg.Register("qemu.jumpstarter.dev", "built-in", qemu.New())
//	h, err := host.Discover(ctx, *pluginDir, reg, host.Options{Logger: ctrl.Log.WithName("plugins"), Checksums: sums})
//	if err != nil { ... fail, or log and go on with the plugins that started ... }
//	_ = mgr.Add(h) // closes every plugin process when the manager stops
//
// Each plugin is a *Plugin implementing provisioner.Provisioner, so the reconciler cannot tell
// a plugin from a built-in provisioner. The host side of the lifecycle:
//
//   - Discovery: executables named exporterset-provisioner-<anything> in the plugin directory;
//     each is started and asked (Describe) which names it serves; a name served twice is an
//     error naming both origins.
//   - Integrity: Options.Checksums pins binaries by SHA-256 (go-plugin SecureConfig, checked at
//     every start). Host and plugin authenticate each other with go-plugin's AutoMTLS.
//   - Health: a crash is noticed when it happens; a running plugin is health-checked every
//     Options.HealthInterval. A failed plugin is restarted by the next call, with a doubling
//     backoff while it keeps failing; meanwhile calls fail with transient errors, so that the
//     reconciler retries and deletes nothing.
//   - Deadlines: every RPC runs under Options.CallTimeout; starts under Options.StartTimeout.
//   - Shutdown: Close (or the manager stopping, through Start) ends every plugin process; on
//     Linux a plugin also dies with the controller when the controller is killed outright.
//   - Logs: each plugin's stderr lands in Options.Logger with the plugin's name, at the
//     level it logged (plugin.Serve makes plugin logs hclog JSON lines).
//   - Debugging: plugins listed in EXPORTERSET_REATTACH_PROVISIONERS (EnvReattach; a plugin prints the line in debug mode, see package plugin) are
//     used where they run instead of being started, and never killed.
package host
