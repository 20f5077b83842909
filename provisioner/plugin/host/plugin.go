package host

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/go-logr/logr"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	corev1 "k8s.io/api/core/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/plugin/internal/wire"
)

// Plugin is one plugin (a binary, or a running plugin reattached to) behind the
// provisioner.Provisioner interface, so that the reconciler cannot tell it from a built-in.
//
// The process starts on first use (Discover's Describe is that use). A crash, a lost
// connection or two failed health checks in a row end the process; the next call starts a new
// one, at once after a first failure, then with a doubling backoff while failures repeat, and
// reports the wait as a transient error meanwhile. Every RPC runs under Options.CallTimeout.
// Failures of the plugin itself (as opposed to errors the provisioner returns) are transient,
// so that the reconciler retries and never deletes an instance because a plugin crashed.
//
// Describe answers from the description the plugin gave when it started; a restarted plugin
// must serve the same names.
type Plugin struct {
	label    string // for logs: the binary's file name, or the reattach label
	origin   string // for the registry: the binary's path, or "reattached plugin <label>"
	path     string
	reattach *goplugin.ReattachConfig
	checksum []byte
	opts     Options
	log      logr.Logger

	// startSem serializes starts; callers wait on it with their context.
	startSem chan struct{}

	mu        sync.Mutex
	cur       *instance
	info      Info
	described bool
	failures  int // consecutive failures
	retryAt   time.Time
	lastErr   error
	closed    bool

	// bg tracks the goroutines that start, watch and kill processes; Close waits for them.
	bg sync.WaitGroup
}

var (
	_ provisioner.Provisioner      = (*Plugin)(nil)
	_ provisioner.WarningValidator = (*Plugin)(nil)
)

// instance is one plugin process and its connection.
type instance struct {
	client   *goplugin.Client
	rpc      *wire.GRPCClient
	conn     *grpc.ClientConn
	cmd      *exec.Cmd
	pid      int
	sockDir  string // holds the plugin's Unix socket; removed with the process
	started  time.Time
	stderr   *tailBuffer
	stop     chan struct{}
	stopOnce sync.Once
}

func (i *instance) exited() bool {
	select {
	case <-i.rpc.Done():
		return true
	default:
		return i.client.Exited()
	}
}

func newBinaryPlugin(path string, opts Options) (*Plugin, error) {
	opts = opts.withDefaults()
	label := filepath.Base(path)
	p := newPlugin(label, path, opts)
	p.path = path
	if opts.Checksums != nil {
		sum, ok := opts.Checksums[label]
		if !ok {
			return nil, fmt.Errorf("plugin %s has no pinned SHA-256 checksum; refusing to run it", path)
		}
		b, err := decodeSum(sum)
		if err != nil {
			return nil, fmt.Errorf("pinned checksum of plugin %s: %w", path, err)
		}
		p.checksum = b
	}
	return p, nil
}

func newAttachedPlugin(label string, rc ReattachConfig, opts Options) (*Plugin, error) {
	opts = opts.withDefaults()
	gp, err := rc.GoPlugin()
	if err != nil {
		return nil, fmt.Errorf("%s: plugin %q: %w", EnvReattach, label, err)
	}
	p := newPlugin(label, "reattached plugin "+label, opts)
	p.reattach = gp
	return p, nil
}

func newPlugin(label, origin string, opts Options) *Plugin {
	return &Plugin{
		label:    label,
		origin:   origin,
		opts:     opts,
		log:      opts.Logger.WithValues("plugin", label),
		startSem: make(chan struct{}, 1),
	}
}

// Load returns the plugin binary at path, started and described, for a caller that manages
// one plugin without discovery (provisionertest.LoadPlugin). Close it when done.
func Load(ctx context.Context, path string, opts Options) (*Plugin, error) {
	p, err := newBinaryPlugin(path, opts)
	if err != nil {
		return nil, err
	}
	if _, err := p.instance(ctx); err != nil {
		_ = p.Close()
		return nil, err
	}
	return p, nil
}

// Attach returns the running plugin rc points at (see EnvReattach), described. Close
// it when done; a plugin in debug mode (rc.Test) is never killed.
func Attach(ctx context.Context, label string, rc ReattachConfig, opts Options) (*Plugin, error) {
	p, err := newAttachedPlugin(label, rc, opts)
	if err != nil {
		return nil, err
	}
	if _, err := p.instance(ctx); err != nil {
		_ = p.Close()
		return nil, err
	}
	return p, nil
}

// Label returns the plugin's name in logs: its file name, or its reattach label.
func (p *Plugin) Label() string { return p.label }

// Origin returns where the plugin comes from, as registered: its path, or "reattached plugin
// <label>".
func (p *Plugin) Origin() string { return p.origin }

// Info returns what the plugin said about itself when it last started.
func (p *Plugin) Info() Info {
	p.mu.Lock()
	defer p.mu.Unlock()
	return copyInfo(p.info)
}

// PID returns the process id of the running plugin, or 0 when none runs.
func (p *Plugin) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur == nil {
		return 0
	}
	return p.cur.pid
}

// Describe returns the plugin's description, starting the plugin when it was never started.
func (p *Plugin) Describe(ctx context.Context) (provisioner.Description, error) {
	p.mu.Lock()
	described := p.described
	p.mu.Unlock()
	if !described {
		if _, err := p.instance(ctx); err != nil {
			return provisioner.Description{}, err
		}
	}
	return p.Info().Description, nil
}

// Validate calls the plugin's Validate.
func (p *Plugin) Validate(ctx context.Context, req *provisioner.Request) error {
	return p.call(ctx, "Validate", func(ctx context.Context, c *wire.GRPCClient) error {
		return c.Validate(ctx, req)
	})
}

// RenderPod calls the plugin's RenderPod.
func (p *Plugin) RenderPod(ctx context.Context, req *provisioner.Request) (*corev1.Pod, error) {
	var pod *corev1.Pod
	err := p.call(ctx, "RenderPod", func(ctx context.Context, c *wire.GRPCClient) (err error) {
		pod, err = c.RenderPod(ctx, req)
		return err
	})
	return pod, err
}

// EnrichDrivers calls the plugin's EnrichDrivers.
func (p *Plugin) EnrichDrivers(ctx context.Context, req *provisioner.Request) ([]vtv1alpha1.DriverSpec, error) {
	var drivers []vtv1alpha1.DriverSpec
	err := p.call(ctx, "EnrichDrivers", func(ctx context.Context, c *wire.GRPCClient) (err error) {
		drivers, err = c.EnrichDrivers(ctx, req)
		return err
	})
	return drivers, err
}

// Cleanup calls the plugin's Cleanup.
func (p *Plugin) Cleanup(ctx context.Context, req *provisioner.Request) error {
	return p.call(ctx, "Cleanup", func(ctx context.Context, c *wire.GRPCClient) error {
		return c.Cleanup(ctx, req)
	})
}

// Warnings calls the plugin's Warnings (provisioner.WarningValidator); a plugin without
// warnings, or built before the RPC existed, has none.
func (p *Plugin) Warnings(ctx context.Context, req *provisioner.Request) ([]provisioner.Warning, error) {
	var warnings []provisioner.Warning
	err := p.call(ctx, "Warnings", func(ctx context.Context, c *wire.GRPCClient) (err error) {
		warnings, err = c.Warnings(ctx, req)
		return err
	})
	return warnings, err
}

// call runs one RPC on a running plugin under the call deadline. The provisioner's own errors
// pass unchanged (same code, fields and text as in the plugin); failures of the transport get
// the plugin's name, and a lost connection ends the process so that the next call restarts it.
func (p *Plugin) call(ctx context.Context, method string, fn func(context.Context, *wire.GRPCClient) error) error {
	inst, err := p.instance(ctx)
	if err != nil {
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, p.opts.CallTimeout)
	defer cancel()
	err = fn(cctx, inst.rpc)
	var te *wire.TransportError
	if err == nil || !errors.As(err, &te) {
		return err
	}
	switch {
	case te.Code == codes.Unavailable:
		p.fail(inst, fmt.Errorf("%s: %w", method, err))
		return provisioner.Transient(fmt.Errorf("plugin %s (pid %d) became unreachable during %s; it is restarted on the next call: %w", p.label, inst.pid, method, err))
	case ctx.Err() == nil && (errors.Is(cctx.Err(), context.DeadlineExceeded) || te.Code == codes.DeadlineExceeded):
		// The server side may report the propagated deadline a moment before our own timer
		// fires: either way it is this call's deadline, not the caller's.
		return provisioner.Transient(fmt.Errorf("plugin %s did not answer %s within %s: %w", p.label, method, p.opts.CallTimeout, err))
	default:
		return &provisioner.Error{Code: provisioner.CodeOf(err), Err: fmt.Errorf("plugin %s: %w", p.label, err)}
	}
}
