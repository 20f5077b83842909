package host

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"time"

	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/plugin/internal/wire"
)

// startResult is the outcome of one start, handed to the callers waiting for it.
type startResult struct {
	inst *instance
	err  error
}

// instance returns the running plugin process, starting one when there is none and the
// backoff allows. Errors are transient.
func (p *Plugin) instance(ctx context.Context) (*instance, error) {
	select {
	case p.startSem <- struct{}{}:
	case <-ctx.Done():
		return nil, provisioner.Transient(fmt.Errorf("plugin %s: waiting for the plugin to start: %w", p.label, ctx.Err()))
	}
	p.mu.Lock()
	inst, err := p.usableLocked()
	if inst != nil || err != nil {
		p.mu.Unlock()
		<-p.startSem
		return inst, err
	}
	p.bg.Add(1)
	p.mu.Unlock()

	// The start goes on when the caller gives up: the plugin is then ready for the next call.
	res := make(chan startResult, 1)
	go func() {
		defer p.bg.Done()
		defer func() { <-p.startSem }()
		inst, info, err := p.start()
		res <- p.started(inst, info, err)
	}()
	select {
	case r := <-res:
		return r.inst, r.err
	case <-ctx.Done():
		return nil, provisioner.Transient(fmt.Errorf("plugin %s: still starting: %w", p.label, ctx.Err()))
	}
}

// usableLocked returns the running instance, or an error when none may be started now, or
// neither when one should be started.
func (p *Plugin) usableLocked() (*instance, error) {
	if p.closed {
		return nil, provisioner.Transient(fmt.Errorf("plugin %s: the plugin host is shut down", p.label))
	}
	if p.cur != nil {
		if !p.cur.exited() {
			return p.cur, nil
		}
		p.failLocked(p.cur, p.exitReason(p.cur))
	}
	if wait := time.Until(p.retryAt); wait > 0 {
		return nil, provisioner.Transient(fmt.Errorf("plugin %s failed %d times in a row (last: %v); next start in %s",
			p.label, p.failures, p.lastErr, wait.Round(time.Millisecond)))
	}
	return nil, nil
}

// start starts a plugin process (or connects to a reattached one) and describes it.
func (p *Plugin) start() (*instance, Info, error) {
	inst := &instance{stop: make(chan struct{}), started: time.Now(), stderr: &tailBuffer{}}
	cfg := &goplugin.ClientConfig{
		HandshakeConfig:  wire.Handshake(),
		VersionedPlugins: wire.VersionedPlugins(nil),
		AllowedProtocols: wire.AllowedProtocols(),
		Logger:           newHCLogBridge(p.log),
		StartTimeout:     p.opts.StartTimeout,
		Stderr:           inst.stderr,
		SyncStdout:       newLineWriter(func(line string) { p.log.Info(line, "stream", "stdout") }),
		SyncStderr:       newLineWriter(func(line string) { p.log.Info(line, "stream", "stderr") }),
	}
	if p.reattach != nil {
		cfg.Reattach = p.reattach
		// go-plugin negotiates nothing when reattaching: pick the set of the plugin's version.
		cfg.Plugins = wire.VersionedPlugins(nil)[p.reattach.ProtocolVersion]
		inst.pid = p.reattach.Pid
	} else {
		cmd := exec.Command(p.path)
		configureCmd(cmd)
		// The plugin's socket goes into a directory of its own, so that the host can remove it
		// however the plugin ends.
		if dir, err := os.MkdirTemp("", "exporterset-plugin-"); err == nil {
			inst.sockDir = dir
			cmd.Env = []string{goplugin.EnvUnixSocketDir + "=" + dir}
		}
		cfg.Cmd = cmd
		cfg.AutoMTLS = true
		if p.checksum != nil {
			// A fresh hash per start: SecureConfig.Check writes into Hash without resetting it.
			cfg.SecureConfig = &goplugin.SecureConfig{Checksum: p.checksum, Hash: sha256.New()}
		}
		inst.cmd = cmd
	}
	inst.client = goplugin.NewClient(cfg)
	fail := func(err error) (*instance, Info, error) {
		ended := inst.client.Exited()
		p.kill(inst)
		if ended && inst.cmd != nil && endedByItself(inst.cmd.ProcessState) {
			err = fmt.Errorf("%w (the plugin process ended by itself: %s)", err, inst.cmd.ProcessState)
		}
		if tail := inst.stderr.String(); tail != "" {
			err = fmt.Errorf("%w (plugin output: %s)", err, tail)
		}
		return nil, Info{}, err
	}
	proto, err := inst.client.Client()
	if err != nil {
		if inst.cmd != nil && waitExited(inst.client, 200*time.Millisecond) && endedByItself(inst.cmd.ProcessState) {
			// go-plugin's text for this (an unrecognized handshake, no output) hides the cause.
			err = errors.New("the plugin exited before completing its handshake")
		}
		return fail(fmt.Errorf("starting plugin %s: %w", p.origin, err))
	}
	if inst.cmd != nil && inst.cmd.Process != nil {
		inst.pid = inst.cmd.Process.Pid
	}
	if gc, ok := proto.(*goplugin.GRPCClient); ok {
		inst.conn = gc.Conn
	}
	raw, err := proto.Dispense(wire.PluginName)
	if err != nil {
		return fail(fmt.Errorf("plugin %s: %w", p.origin, err))
	}
	rpc, ok := raw.(*wire.GRPCClient)
	if !ok {
		return fail(fmt.Errorf("plugin %s: dispensed %T, want *wire.GRPCClient", p.origin, raw))
	}
	inst.rpc = rpc
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.CallTimeout)
	info, err := rpc.Info(ctx)
	timedOut := errors.Is(ctx.Err(), context.DeadlineExceeded) // before cancel() makes it Canceled
	cancel()
	if err != nil {
		// The plugin's side may report the propagated deadline a moment before our own
		// timer fires (as call does in plugin.go): either way it is this deadline.
		var te *wire.TransportError
		if timedOut || errors.As(err, &te) && te.Code == codes.DeadlineExceeded {
			return fail(fmt.Errorf("plugin %s did not answer Describe within %s: %w", p.origin, p.opts.CallTimeout, err))
		}
		return fail(fmt.Errorf("plugin %s: Describe: %w", p.origin, err))
	}
	if len(info.Names) == 0 {
		return fail(fmt.Errorf("plugin %s serves no provisioner names", p.origin))
	}
	return inst, Info(info), nil
}

// started records the outcome of a start.
func (p *Plugin) started(inst *instance, info Info, err error) startResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil && p.described && !sameNames(info.Names, p.info.Names) {
		p.bg.Add(1)
		go func() { defer p.bg.Done(); p.kill(inst) }()
		inst, err = nil, fmt.Errorf("plugin %s now serves %v, but served %v when it was registered", p.origin, info.Names, p.info.Names)
	}
	if err != nil {
		p.recordFailureLocked(err)
		p.log.Error(err, "plugin failed to start", "failures", p.failures, "nextStartIn", time.Until(p.retryAt).Round(time.Millisecond))
		return startResult{err: provisioner.Transient(err)}
	}
	if p.closed {
		p.bg.Add(1)
		go func() { defer p.bg.Done(); p.kill(inst) }()
		return startResult{err: provisioner.Transient(fmt.Errorf("plugin %s: the plugin host is shut down", p.label))}
	}
	p.info, p.described, p.cur = info, true, inst
	p.log.Info("plugin started", "pid", inst.pid, "names", info.Names, "version", info.Version,
		"protocol", inst.client.NegotiatedVersion(), "sdk", info.SDKVersion, "origin", p.origin)
	p.bg.Add(1)
	go p.watch(inst)
	return startResult{inst: inst}
}

// watch notices at once when the process exits, and health-checks it meanwhile: a plugin that
// stopped serving is ended, so that the next call starts a fresh one.
func (p *Plugin) watch(inst *instance) {
	defer p.bg.Done()
	t := time.NewTicker(p.opts.HealthInterval)
	defer t.Stop()
	misses := 0
	for {
		select {
		case <-inst.stop:
			return
		case <-inst.rpc.Done():
			p.fail(inst, p.exitReason(inst))
			return
		case <-t.C:
		}
		if inst.conn == nil {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), p.opts.HealthTimeout)
		_, err := healthpb.NewHealthClient(inst.conn).Check(ctx, &healthpb.HealthCheckRequest{Service: goplugin.GRPCServiceName})
		cancel()
		if err == nil {
			misses = 0
			continue
		}
		misses++
		p.log.Info("plugin health check failed", "pid", inst.pid, "error", err.Error(), "misses", misses)
		if misses >= 2 {
			p.fail(inst, fmt.Errorf("health check failed twice in a row: %w", err))
			return
		}
	}
}

func (p *Plugin) exitReason(inst *instance) error {
	if tail := inst.stderr.String(); tail != "" {
		return fmt.Errorf("the plugin process exited (plugin output: %s)", tail)
	}
	return errors.New("the plugin process exited")
}

func (p *Plugin) fail(inst *instance, reason error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.failLocked(inst, reason)
}

// failLocked retires inst when it is still the current instance; the next call starts anew.
func (p *Plugin) failLocked(inst *instance, reason error) {
	if p.cur != inst {
		return // already retired, or closed
	}
	p.cur = nil
	if time.Since(inst.started) > p.opts.MaxRestartBackoff {
		p.failures = 0 // it had been running fine: start the backoff over
	}
	p.recordFailureLocked(reason)
	p.log.Error(reason, "plugin failed; it is restarted on the next call", "pid", inst.pid,
		"failures", p.failures, "nextStartIn", time.Until(p.retryAt).Round(time.Millisecond))
	p.bg.Add(1)
	go func() { defer p.bg.Done(); p.kill(inst) }()
}

func (p *Plugin) recordFailureLocked(err error) {
	p.failures++
	p.lastErr = err
	var delay time.Duration
	if p.failures > 1 {
		delay = p.opts.MaxRestartBackoff
		if shift := p.failures - 2; shift < 30 {
			delay = min(p.opts.RestartBackoff<<shift, p.opts.MaxRestartBackoff)
		}
	}
	p.retryAt = time.Now().Add(delay)
}

// kill ends inst's process: go-plugin asks it to exit and waits up to 2s, and when that does
// not end it within KillTimeout (a plugin stopped or stuck in the kernel) it gets SIGKILL. A
// reattached plugin in debug mode is only disconnected: it belongs to the person debugging.
func (p *Plugin) kill(inst *instance) {
	inst.stopOnce.Do(func() { close(inst.stop) })
	if inst.client == nil {
		return
	}
	if p.reattach != nil && p.reattach.Test {
		if inst.conn != nil {
			_ = inst.conn.Close()
		}
		return
	}
	done := make(chan struct{})
	go func() {
		inst.client.Kill()
		if inst.sockDir != "" {
			_ = os.RemoveAll(inst.sockDir) // a plugin that crashed or was killed cannot remove its socket
		}
		close(done)
	}()
	select {
	case <-done:
		return
	case <-time.After(p.opts.KillTimeout):
	}
	p.log.Info("plugin did not exit in time; sending SIGKILL", "pid", inst.pid, "timeout", p.opts.KillTimeout)
	if inst.cmd != nil && inst.cmd.Process != nil {
		_ = inst.cmd.Process.Kill()
	}
	select {
	case <-done:
	case <-time.After(p.opts.KillTimeout):
		p.log.Error(nil, "plugin process did not go away after SIGKILL", "pid", inst.pid)
	}
}

// Close ends the plugin process and waits for it; calls after Close fail (transient).
func (p *Plugin) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		p.bg.Wait()
		return nil
	}
	p.closed = true
	inst := p.cur
	p.cur = nil
	p.mu.Unlock()
	if inst != nil {
		p.kill(inst)
	}
	p.bg.Wait()
	return nil
}

// waitExited reports whether the plugin process has exited, waiting up to d for it: a plugin
// that dies while starting closes its stdout a moment before go-plugin reaps it.
func waitExited(c *goplugin.Client, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for !c.Exited() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

// endedByItself tells a process that exited or crashed from one killed (SIGKILL) by the host
// or by go-plugin.
func endedByItself(ps *os.ProcessState) bool {
	if ps == nil {
		return false
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ws.Signal() != syscall.SIGKILL
	}
	return ps.Exited()
}

func sameNames(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func copyInfo(in Info) Info {
	out := in
	out.Names = slices.Clone(in.Names)
	out.ParameterSchema = slices.Clone(in.ParameterSchema)
	return out
}
