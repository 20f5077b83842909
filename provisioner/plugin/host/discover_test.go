package host_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/plugin"
	"github.com/exporterset/exporterset/provisioner/plugin/host"
	"github.com/exporterset/exporterset/provisioner/provisionertest"
)

// TestDiscoverAndConformance builds the example plugin (TestMain), discovers it in a plugin
// directory next to files that are not plugins, and runs the conformance suite on what the
// registry returns: the real gRPC path, as the reconciler would use it.
func TestDiscoverAndConformance(t *testing.T) {
	dir := pluginDir(t)
	path := install(t, dir, examplePlugin, "container")
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("not a plugin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, plugin.BinaryPrefix+"notes.txt"), []byte("not executable"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, plugin.BinaryPrefix+"dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	reg := provisioner.NewRegistry()
	h, err := host.Discover(t.Context(), dir, reg, fastOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if names := reg.Names(); len(names) != 1 || names[0] != "container.example.dev" {
		t.Fatalf("registered %v", names)
	}
	if o := reg.Origin("container.example.dev"); o != path {
		t.Errorf("origin %q, want %q", o, path)
	}
	p, _ := reg.Get("container.example.dev")
	provisionertest.Run(t, p, exampleKitConfig())
}

// exampleKitConfig is the conformance kit's configuration for the example plugin, judged by
// the test API server.
func exampleKitConfig() provisionertest.Config {
	return provisionertest.Config{
		Parameters: `{"image": "busybox:1.36", "command": ["sleep", "infinity"], "resources": {"memory": "64Mi"}}`,
		Names:      []string{"container.example.dev"},
		Invalid: []provisionertest.Invalid{
			{Name: "bad memory", Parameters: `{"image": "x", "resources": {"memory": "2 GB"}}`, Fields: []string{"parameters.resources.memory"}},
			{Name: "unknown parameter", Parameters: `{"image": "x", "colour": "red"}`, Fields: []string{"parameters.colour"}},
		},
		DryRun: func(ctx context.Context, pod *corev1.Pod) error { return env.DryRunCreate(ctx, pod) },
	}
}

// TestDuplicateNames: two plugins serving one name, or a plugin serving a built-in's name, is
// an error naming both origins; the first registered keeps the name.
func TestDuplicateNames(t *testing.T) {
	dir := pluginDir(t)
	first := install(t, dir, examplePlugin, "container")
	second := install(t, dir, testPlugin, "dup") // claims container.example.dev too
	okPath := install(t, dir, testPlugin, "ok")
	reg := provisioner.NewRegistry()
	if err := reg.Register("ok.test.example.dev", "built-in", provisioner.Funcs{}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	h, err := discover(t, dir, reg, fastOptions(t))
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("discovery took %s", took)
	}
	for _, want := range []string{
		fmt.Sprintf(`provisioner "container.example.dev" is served by both %s and %s`, first, second),
		fmt.Sprintf(`provisioner "ok.test.example.dev" is served by both built-in and %s`, okPath),
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v\nwant it to contain %q", err, want)
		}
	}
	if reg.Origin("container.example.dev") != first || reg.Origin("ok.test.example.dev") != "built-in" {
		t.Errorf("origins %q, %q", reg.Origin("container.example.dev"), reg.Origin("ok.test.example.dev"))
	}
	// The plugins left serving nothing are not kept running.
	if got := len(processesUnder(dir)); got != 1 || len(h.Plugins()) != 1 {
		t.Errorf("%d plugin processes, %d plugins kept, want 1 (the example)", got, len(h.Plugins()))
	}
}

// TestDiscoverKeepsTheGoodPlugins: a broken plugin is reported, the others are registered.
func TestDiscoverKeepsTheGoodPlugins(t *testing.T) {
	dir := pluginDir(t)
	bad := install(t, dir, testPlugin, "crash-at-start")
	install(t, dir, testPlugin, "ok")
	reg := provisioner.NewRegistry()
	_, err := discover(t, dir, reg, fastOptions(t))
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), "cannot open the licence file") {
		t.Errorf("error %v, want it to name %s and its output", err, bad)
	}
	if names := reg.Names(); len(names) != 1 || names[0] != "ok.test.example.dev" {
		t.Errorf("registered %v", names)
	}
	if _, err := host.Discover(t.Context(), filepath.Join(dir, "missing"), provisioner.NewRegistry(), fastOptions(t)); err == nil {
		t.Error("a missing plugin directory is not an error")
	}
	if h, err := host.Discover(t.Context(), "", provisioner.NewRegistry(), fastOptions(t)); err != nil || len(h.Plugins()) != 0 {
		t.Errorf("no plugin directory: %v, %d plugins", err, len(h.Plugins()))
	}
}

func TestChecksumPinning(t *testing.T) {
	dir := pluginDir(t)
	path := install(t, dir, testPlugin, "ok")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	good, err := host.ParseSHA256Sums([]byte(hex.EncodeToString(sum[:]) + "  " + path + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	opts := fastOptions(t)
	opts.Checksums = good
	p := load(t, path, opts)
	// Every start checks again: a restart after a crash too.
	if err := syscallKill(p.PID()); err != nil {
		t.Fatal(err)
	}
	eventually(t, 3*time.Second, "the crash to be noticed", func() bool { return p.PID() == 0 })
	if err := p.Validate(t.Context(), request(t, `{}`)); err != nil {
		t.Fatalf("restart of a pinned plugin: %v", err)
	}

	opts.Checksums = map[string]string{filepath.Base(path): strings.Repeat("ab", 32)}
	if _, err := host.Load(t.Context(), path, opts); err == nil || !strings.Contains(err.Error(), "checksums did not match") {
		t.Errorf("wrong checksum: %v", err)
	}
	opts.Checksums = map[string]string{"exporterset-provisioner-other": hex.EncodeToString(sum[:])}
	if _, err := host.Load(t.Context(), path, opts); err == nil || !strings.Contains(err.Error(), "no pinned SHA-256") {
		t.Errorf("unpinned binary: %v", err)
	}
	reg := provisioner.NewRegistry()
	if _, err := discover(t, dir, reg, opts); err == nil || len(reg.Names()) != 0 {
		t.Errorf("discovery of an unpinned binary: %v, registered %v", err, reg.Names())
	}
}

// TestReattach: a plugin started by hand in debug mode is used through the environment
// variable, takes its names from the installed binary, and is not killed by the host.
func TestReattach(t *testing.T) {
	dir := pluginDir(t)
	debugDir := t.TempDir()
	debugBin := install(t, debugDir, testPlugin, "ok")
	install(t, dir, testPlugin, "ok") // the installed binary serving the same name

	cmd := exec.Command(debugBin)
	cmd.Env = append(os.Environ(), plugin.EnvDebug+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Ctrl-C, as a person ends a plugin in debug mode (it then removes its socket).
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Error("the plugin in debug mode did not stop on SIGINT")
			_ = cmd.Process.Kill()
		}
	})
	line := make(chan string, 1)
	go func() {
		buf := make([]byte, 0, 4096)
		tmp := make([]byte, 1024)
		for {
			n, err := stdout.Read(tmp)
			buf = append(buf, tmp[:n]...)
			for _, l := range strings.Split(string(buf), "\n") {
				if v, ok := strings.CutPrefix(strings.TrimSpace(l), host.EnvReattach+"='"); ok && strings.HasSuffix(v, "'") {
					line <- strings.TrimSuffix(v, "'")
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	var value string
	select {
	case value = <-line:
	case <-time.After(5 * time.Second):
		t.Fatal("the plugin in debug mode printed no reattach line within 5s")
	}
	t.Setenv(host.EnvReattach, value)

	opts := fastOptions(t)
	opts.Reattach = nil // read the environment
	reg := provisioner.NewRegistry()
	h, err := discover(t, dir, reg, opts)
	if err != nil {
		t.Fatal(err)
	}
	if o := reg.Origin("ok.test.example.dev"); o != "reattached plugin exporterset-provisioner-ok" {
		t.Errorf("origin %q, want the reattached plugin", o)
	}
	p, _ := reg.Get("ok.test.example.dev")
	if _, err := p.RenderPod(t.Context(), request(t, `{}`)); err != nil {
		t.Fatal(err)
	}
	if got := len(processesUnder(dir)); got != 0 {
		t.Errorf("%d processes of the installed binary still run; its only name is served by the reattached plugin", got)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
	if !alive(cmd.Process.Pid) {
		t.Error("closing the host killed the plugin in debug mode")
	}

	// A reattach line pointing nowhere is a clear error.
	opts.Reattach = map[string]host.ReattachConfig{"gone": {Protocol: "grpc", ProtocolVersion: 1, Pid: 1, Test: true,
		Addr: host.ReattachAddr{Network: "unix", String: filepath.Join(debugDir, "no-socket")}}}
	if _, err := discover(t, "", provisioner.NewRegistry(), opts); err == nil || !strings.Contains(err.Error(), "reattached plugin gone") {
		t.Errorf("reattaching to nothing: %v", err)
	}
}

// discover is host.Discover, closed when the test ends.
func discover(t *testing.T, dir string, reg *provisioner.Registry, opts host.Options) (*host.Host, error) {
	h, err := host.Discover(t.Context(), dir, reg, opts)
	t.Cleanup(func() { _ = h.Close() })
	return h, err
}
