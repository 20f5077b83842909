package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	hclog "github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/plugin/internal/wire"
)

// BinaryPrefix starts the file name of every plugin executable the controller discovers, e.g.
// exporterset-provisioner-renode.
const BinaryPrefix = wire.BinaryPrefix

// EnvDebug names the environment variable that puts Serve in debug mode, as WithDebug does:
// EXPORTERSET_PLUGIN_DEBUG=1 serves without a host, prints the line that makes a controller
// use the running plugin, and serves until SIGINT or SIGTERM.
const EnvDebug = "EXPORTERSET_PLUGIN_DEBUG"

// Serve runs p as a provisioner plugin; with its error handling it is the whole main() of a
// plugin binary:
//
//	func main() {
//		if err := plugin.Serve(myProvisioner{}); err != nil {
//			log.Fatal(err)
//		}
//	}
//
// It returns nil when the host ends the plugin (or, in debug mode, when the debug context is
// done), and an error without serving when p is nil or when the binary was started by hand
// outside debug mode. Serve does not exit the process, main decides (go-plugin itself still
// exits with status 1 in the one case it cannot report: failing to create its stdio pipes).
//
// The standard library's log (and so log/slog's default) is redirected to the plugin's
// logger, by default hclog JSON lines on stderr, which the host puts into the controller's log
// with the plugin's name; a line starting with [DEBUG], [WARN] or [ERROR] gets that level.
func Serve(p provisioner.Provisioner, opts ...ServeOpt) error {
	name := filepath.Base(os.Args[0])
	if p == nil {
		return fmt.Errorf("%s: plugin.Serve called with a nil provisioner", name)
	}
	c := serveConfig{}
	for _, o := range opts {
		o(&c)
	}
	if c.debugCtx == nil {
		if debug, _ := strconv.ParseBool(os.Getenv(EnvDebug)); debug {
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			c.debugCtx, c.debugOut = ctx, os.Stdout
		}
	}
	handshake := wire.Handshake()
	// Checked here rather than left to go-plugin, which would exit the process with a text
	// that does not say how to run the plugin by hand; and before the log is redirected, so
	// that main can print the error as it likes.
	if c.debugCtx == nil && os.Getenv(handshake.MagicCookieKey) != handshake.MagicCookieValue {
		return fmt.Errorf("%s is an ExporterSet provisioner plugin: the controller starts it from its plugin directory.\n"+
			"To run it by hand (e.g. in a debugger), set %s=1 and follow the instructions it prints", name, EnvDebug)
	}
	if c.logger == nil {
		// hclog's JSON lines on the real stderr are what go-plugin's host parses into levels
		// and key/value pairs.
		c.logger = hclog.New(&hclog.LoggerOptions{Level: hclog.Debug, Output: os.Stderr, JSONFormat: true})
	}
	log.SetFlags(0)
	log.SetOutput(c.logger.StandardWriter(&hclog.StandardLoggerOptions{InferLevels: true}))

	cfg := &goplugin.ServeConfig{
		HandshakeConfig:  handshake,
		VersionedPlugins: wire.VersionedPlugins(p),
		GRPCServer:       goplugin.DefaultGRPCServer,
		Logger:           c.logger,
	}
	if c.debugCtx != nil {
		return serveDebug(c.debugCtx, name, c.debugOut, cfg)
	}
	goplugin.Serve(cfg)
	return nil
}

// serveDebug serves in go-plugin's test mode, which skips the handshake and reports the
// address instead of printing it for a host, and writes the EnvReattach line to out; it serves
// until ctx is done.
func serveDebug(ctx context.Context, name string, out io.Writer, cfg *goplugin.ServeConfig) error {
	reattach := make(chan *goplugin.ReattachConfig, 1)
	closed := make(chan struct{})
	cfg.Test = &goplugin.ServeTestConfig{Context: ctx, ReattachConfigCh: reattach, CloseCh: closed}
	go goplugin.Serve(cfg)
	select {
	case rc := <-reattach:
		line, err := wire.FormatReattachConfigs(map[string]wire.ReattachConfig{name: wire.NewReattachConfig(rc)})
		if err != nil { // not expected: the line is the JSON of plain strings and numbers
			return fmt.Errorf("%s: %w", name, err)
		}
		fmt.Fprintf(out, "%s is running in debug mode (pid %d). To use it instead of starting plugin binaries,\n"+
			"start the controller with this in its environment:\n\n\t%s='%s'\n\n"+
			"Stop the plugin with Ctrl-C.\n", name, os.Getpid(), wire.EnvReattach, line)
	case <-closed:
		return errors.New(name + ": the plugin server ended before it listened (see its log)")
	}
	<-closed
	return nil
}
