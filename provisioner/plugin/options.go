package plugin

import (
	"context"
	"io"
	"os"

	hclog "github.com/hashicorp/go-hclog"
)

// ServeOpt is an option of Serve.
type ServeOpt func(*serveConfig)

type serveConfig struct {
	logger   hclog.Logger
	debugCtx context.Context
	debugOut io.Writer
}

// WithLogger makes go-plugin and the standard library's log write to logger instead of the
// default: hclog JSON lines at debug level on stderr. The host parses JSON lines on stderr
// into levels and key/value pairs, so a plugin run by a controller should keep JSONFormat and
// Output os.Stderr, and may change the level or name.
func WithLogger(logger hclog.Logger) ServeOpt {
	return func(c *serveConfig) { c.logger = logger }
}

// WithDebug serves in debug mode, as EnvDebug=1 does, but under the caller's control: without
// a host, printing to out (os.Stdout when nil) the EXPORTERSET_REATTACH_PROVISIONERS line that
// makes a controller (or a test, through the host package) use this process, until ctx is
// done. Use it for a -debug flag (with a ctx from signal.NotifyContext, so that Ctrl-C ends
// it), or to run a plugin in a test process.
func WithDebug(ctx context.Context, out io.Writer) ServeOpt {
	return func(c *serveConfig) {
		if out == nil {
			out = os.Stdout
		}
		c.debugCtx, c.debugOut = ctx, out
	}
}
