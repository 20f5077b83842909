package host_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/plugin/host"
	"github.com/exporterset/exporterset/provisioner/plugin/internal/testprov"
	"github.com/exporterset/exporterset/provisioner/provisionertest"
)

func request(t *testing.T, params string) *provisioner.Request {
	t.Helper()
	desc, _ := testprov.Provisioner{}.Describe(t.Context())
	req, err := provisionertest.Config{Parameters: params}.NewRequest(desc)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestKill9DuringCall: the call in flight fails transient (the reconciler retries and deletes
// nothing), and the next call succeeds on a new process.
func TestKill9DuringCall(t *testing.T) {
	dir := pluginDir(t)
	p := load(t, install(t, dir, testPlugin, "ok"), fastOptions(t))
	pid := p.PID()
	marker := filepath.Join(t.TempDir(), "in-call")
	slow := request(t, `{"sleep": "30s", "marker": "`+marker+`"}`)

	errc := make(chan error, 1)
	go func() {
		_, err := p.RenderPod(context.Background(), slow)
		errc <- err
	}()
	eventually(t, 5*time.Second, "the plugin entering RenderPod", func() bool { _, err := os.Stat(marker); return err == nil })
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-errc:
	case <-time.After(5 * time.Second):
		t.Fatal("the call in flight did not fail within 5s of the kill")
	}
	if !provisioner.IsTransient(err) || provisioner.IsInvalid(err) {
		t.Fatalf("call during kill -9: %v (%s), want transient", err, provisioner.CodeOf(err))
	}
	t.Logf("call in flight: %v", err)

	err = within(t, 3*time.Second, "the call after the kill", func() error {
		_, err := p.RenderPod(t.Context(), request(t, `{}`))
		return err
	})
	if err != nil {
		t.Fatalf("the next call failed: %v", err)
	}
	if p.PID() == 0 || p.PID() == pid {
		t.Errorf("pid %d after the restart, was %d", p.PID(), pid)
	}
	if alive(pid) {
		t.Errorf("killed process %d still there", pid)
	}
}

// TestCrashLoopBacksOff: the first restart is immediate, repeated crashes wait.
func TestCrashLoopBacksOff(t *testing.T) {
	dir := pluginDir(t)
	opts := fastOptions(t)
	p := load(t, install(t, dir, testPlugin, "exit-in-render"), opts)
	req := request(t, `{}`)
	for i := 1; i <= 2; i++ {
		_, err := p.RenderPod(t.Context(), req)
		if !provisioner.IsTransient(err) {
			t.Fatalf("crash %d: %v, want transient", i, err)
		}
	}
	err := within(t, time.Second, "a call during the backoff", func() error {
		_, err := p.RenderPod(t.Context(), req)
		return err
	})
	if !provisioner.IsTransient(err) || !strings.Contains(err.Error(), "failed 2 times in a row") || !strings.Contains(err.Error(), "next start in") {
		t.Fatalf("call during the backoff: %v, want a transient error naming the wait", err)
	}
	time.Sleep(opts.RestartBackoff)
	if err := p.Validate(t.Context(), req); err != nil {
		t.Fatalf("after the backoff the plugin starts again: %v", err)
	}
}

// TestHangInRPC: a plugin stuck in a call fails that call at the deadline, keeps serving the
// others, and is still killed on Close.
func TestHangInRPC(t *testing.T) {
	dir := pluginDir(t)
	opts := fastOptions(t)
	opts.CallTimeout = 500 * time.Millisecond
	p := load(t, install(t, dir, testPlugin, "hang-render"), opts)
	req := request(t, `{}`)
	err := within(t, 2*time.Second, "a hanging RenderPod", func() error {
		_, err := p.RenderPod(t.Context(), req)
		return err
	})
	if !provisioner.IsTransient(err) || !strings.Contains(err.Error(), "did not answer RenderPod within 500ms") {
		t.Fatalf("hanging RenderPod: %v, want a transient deadline error", err)
	}
	if err := p.Validate(t.Context(), req); err != nil {
		t.Errorf("the plugin stopped serving other calls: %v", err)
	}
	within(t, 3*time.Second, "closing a plugin with a call stuck", func() error { return p.Close() })
}

// TestHealthCheckRestartsStoppedPlugin: a plugin that stops answering (SIGSTOP) is noticed by
// the health check, killed, and replaced by the next call.
func TestHealthCheckRestartsStoppedPlugin(t *testing.T) {
	dir := pluginDir(t)
	p := load(t, install(t, dir, testPlugin, "ok"), fastOptions(t))
	pid := p.PID()
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the stopped plugin to be retired and killed", func() bool { return p.PID() == 0 && !alive(pid) })
	if err := p.Validate(t.Context(), request(t, `{}`)); err != nil {
		t.Fatalf("call after the health check failure: %v", err)
	}
	if p.PID() == pid || p.PID() == 0 {
		t.Errorf("pid %d, want a new process", p.PID())
	}
}

// TestFailureModes: every way of failing to start gives a clear error within seconds, and
// leaves no process behind.
func TestFailureModes(t *testing.T) {
	for mode, want := range map[string]string{
		"bad-handshake":  "Unrecognized remote plugin message: hello, I am not a plugin",
		"crash-at-start": "the plugin exited before completing its handshake (the plugin process ended by itself: exit status 3) (plugin output: testplugin: cannot open the licence file)",
		"hang-at-start":  "timeout while waiting for plugin to start",
		// go-plugin lists the host's versions from a map, in either order.
		"wrong-protocol": "incompatible API version with plugin. Plugin version: 99, Client versions: [",
		"netrpc":         `unsupported plugin protocol "netrpc"`,
		"hang-describe":  "did not answer Describe within 2s",
		"no-names":       "serves no provisioner names",
	} {
		t.Run(mode, func(t *testing.T) {
			dir := pluginDir(t)
			path := install(t, dir, testPlugin, mode)
			err := within(t, 5*time.Second, "failing to load", func() error {
				p, err := host.Load(t.Context(), path, fastOptions(t))
				if p != nil {
					_ = p.Close()
				}
				return err
			})
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), path) ||
				(mode == "wrong-protocol" && !strings.Contains(err.Error(), "[1 2]") && !strings.Contains(err.Error(), "[2 1]")) {
				t.Fatalf("got %v\nwant an error naming %s and containing %q", err, path, want)
			}
			t.Logf("%s: %v", mode, err)
		})
	}
}

// TestPluginStderrInControllerLog: what a plugin logs lands in the host's logger with the
// plugin's name.
func TestPluginStderrInControllerLog(t *testing.T) {
	dir := pluginDir(t)
	var logs logBuffer
	opts := fastOptions(t)
	opts.Logger = logs.logger()
	p := load(t, install(t, dir, testPlugin, "ok"), opts)
	if _, err := p.RenderPod(t.Context(), request(t, `{"log": "rendering for the conformance exporter"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RenderPod(t.Context(), request(t, `{"log": "[ERROR] disk on fire"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.RenderPod(t.Context(), request(t, `{"stderr": "written to os.Stderr"}`)); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Second, "the plugin's log lines in the host log", func() bool {
		s := logs.String()
		return strings.Contains(s, `"msg"="rendering for the conformance exporter"`) && strings.Contains(s, `"msg"="disk on fire" "error"=`) &&
			strings.Contains(s, `"msg"="written to os.Stderr" "plugin"="exporterset-provisioner-ok" "stream"="stderr"`)
	})
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "rendering for the conformance exporter") && !strings.Contains(line, `"plugin"="exporterset-provisioner-ok"`) {
			t.Errorf("plugin log line without the plugin's name: %s", line)
		}
		if strings.Contains(line, "disk on fire") && strings.Contains(line, `"level"=`) {
			t.Errorf("an [ERROR] line not logged as an error: %s", line)
		}
	}
}

// TestNoOrphansAfterManagerShutdown: the host added to a controller-runtime manager ends every
// plugin process when the manager stops, including a plugin stuck in a call and one stopped.
func TestNoOrphansAfterManagerShutdown(t *testing.T) {
	dir := pluginDir(t)
	install(t, dir, examplePlugin, "container")
	install(t, dir, testPlugin, "ok")
	install(t, dir, testPlugin, "hang-render")
	install(t, dir, testPlugin, "ok.stopped")

	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{
		Scheme: env.Scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	reg := provisioner.NewRegistry()
	opts := fastOptions(t)
	opts.CallTimeout = time.Minute // the stuck call is still in flight at shutdown
	h, err := host.Discover(t.Context(), dir, reg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Add(h); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()

	if got := len(processesUnder(dir)); got != 4 {
		t.Fatalf("%d plugin processes running, want 4", got)
	}
	stuck, _ := reg.Get("hang-render.test.example.dev")
	stuckErr := make(chan error, 1)
	go func() {
		_, err := stuck.RenderPod(context.Background(), request(t, `{}`))
		stuckErr <- err
	}()
	for _, p := range h.Plugins() {
		if p.Label() == "exporterset-provisioner-ok.stopped" {
			if err := syscall.Kill(p.PID(), syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
		}
	}
	time.Sleep(100 * time.Millisecond)

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("manager: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the manager did not stop within 20s")
	}
	if pids := processesUnder(dir); len(pids) != 0 {
		t.Fatalf("plugin processes left after the manager stopped: %v", pids)
	}
	select {
	case err := <-stuckErr:
		if !provisioner.IsTransient(err) {
			t.Errorf("the call stuck at shutdown: %v, want transient", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("the call stuck at shutdown never returned")
	}
	p, _ := reg.Get("ok.test.example.dev")
	if err := p.Validate(t.Context(), request(t, `{}`)); !provisioner.IsTransient(err) || !strings.Contains(err.Error(), "shut down") {
		t.Errorf("call after shutdown: %v, want a transient shut-down error", err)
	}
}
