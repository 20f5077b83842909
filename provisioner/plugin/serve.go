package plugin

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	hclog "github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/exporterset/exporterset/provisioner"
)

// Serve runs impl as a provisioner plugin; it is the whole main() of a plugin binary. It
// returns when the host ends the plugin.
//
// The standard library's log (and so log/slog's default) is redirected to the host, which puts
// each line into the controller's log with the plugin's name; a line starting with [DEBUG],
// [WARN] or [ERROR] gets that level.
//
// Started by hand with EnvDebug=1 (EXPORTERSET_PLUGIN_DEBUG=1), the plugin runs without a host
// and prints the EnvReattach line that makes a controller use it; this is how a plugin is run
// under a debugger. Started by hand without it, Serve explains and exits with status 1.
func Serve(impl provisioner.Provisioner) {
	name := filepath.Base(os.Args[0])
	if impl == nil {
		fmt.Fprintf(os.Stderr, "%s: plugin.Serve called with a nil provisioner\n", name)
		os.Exit(1)
	}
	// hclog's JSON lines on the real stderr are what go-plugin's host parses into levels and
	// key/value pairs.
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: os.Stderr, JSONFormat: true})
	log.SetFlags(0)
	log.SetOutput(logger.StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true}))

	cfg := &goplugin.ServeConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: VersionedPlugins(impl),
		GRPCServer:       goplugin.DefaultGRPCServer,
		Logger:           logger,
	}
	if debug, _ := strconv.ParseBool(os.Getenv(EnvDebug)); debug {
		serveDebug(name, cfg)
		return
	}
	if os.Getenv(Handshake.MagicCookieKey) != Handshake.MagicCookieValue {
		fmt.Fprintf(os.Stderr, "%s is an ExporterSet provisioner plugin: the controller starts it from its plugin directory.\n"+
			"To run it by hand (e.g. in a debugger), set %s=1 and follow the instructions it prints.\n", name, EnvDebug)
		os.Exit(1)
	}
	goplugin.Serve(cfg)
}

// serveDebug serves in go-plugin's test mode, which skips the handshake and reports the
// address instead of printing it for a host; it serves until SIGINT or SIGTERM.
func serveDebug(name string, cfg *goplugin.ServeConfig) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	reattach := make(chan *goplugin.ReattachConfig, 1)
	closed := make(chan struct{})
	cfg.Test = &goplugin.ServeTestConfig{Context: ctx, ReattachConfigCh: reattach, CloseCh: closed}
	go goplugin.Serve(cfg)
	select {
	case rc := <-reattach:
		line, err := FormatReattachConfigs(map[string]ReattachConfig{name: NewReattachConfig(rc)})
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
			os.Exit(1)
		}
		fmt.Printf("%s is running in debug mode (pid %d). To use it instead of starting plugin binaries,\n"+
			"start the controller with this in its environment:\n\n\t%s='%s'\n\n"+
			"Stop the plugin with Ctrl-C.\n", name, os.Getpid(), EnvReattach, line)
	case <-closed:
		return
	}
	<-closed
}
