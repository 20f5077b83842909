package host_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/exporterset/exporterset/internal/testing/testenv"
	"github.com/exporterset/exporterset/provisioner/plugin"
	"github.com/exporterset/exporterset/provisioner/plugin/host"
	"github.com/exporterset/exporterset/provisioner/provisionertest"
)

var (
	env *testenv.Env
	// testPlugin and examplePlugin are built once; tests copy them under the names they need.
	testPlugin, examplePlugin string
)

const (
	testPluginPkg    = "github.com/exporterset/exporterset/provisioner/plugin/internal/testprov/testplugin"
	examplePluginPkg = "github.com/exporterset/exporterset/examples/container-provisioner"
)

type cleanupRun struct {
	m       *testing.M
	cleanup func()
}

func (r cleanupRun) Run() int {
	defer r.cleanup()
	return r.m.Run()
}

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) != "" {
		os.Exit(m.Run()) // a child process of a test: no control plane of its own
	}
	dir, err := os.MkdirTemp("", "plugin-host-bins-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testPlugin = filepath.Join(dir, "testplugin")
	examplePlugin = filepath.Join(dir, "container")
	for out, pkg := range map[string]string{testPlugin: testPluginPkg, examplePlugin: examplePluginPkg} {
		if b, err := exec.Command("go", "build", "-o", out, pkg).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, b)
			os.Exit(1)
		}
	}
	testenv.Main(cleanupRun{m, func() { _ = os.RemoveAll(dir) }}, &env)
}

// install copies bin into dir as exporterset-provisioner-<name> and returns its path.
func install(t *testing.T, dir, bin, name string) string {
	t.Helper()
	src, err := os.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	path := filepath.Join(dir, plugin.BinaryPrefix+name)
	dst, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// pluginDir returns a new plugin directory, checked for orphan processes when the test ends.
func pluginDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Cleanup(func() {
		if pids := processesUnder(dir); len(pids) > 0 {
			t.Errorf("plugin processes left running after the test: %v", pids)
			for _, pid := range pids {
				_ = syscallKill(pid)
			}
		}
	})
	return dir
}

// fastOptions are host options with short timeouts, so that every failure shows in seconds.
func fastOptions(t *testing.T) host.Options {
	return host.Options{
		Logger:            provisionertest.Logger(t),
		StartTimeout:      2 * time.Second,
		CallTimeout:       2 * time.Second,
		HealthInterval:    200 * time.Millisecond,
		HealthTimeout:     500 * time.Millisecond,
		RestartBackoff:    time.Second,
		MaxRestartBackoff: 5 * time.Second,
		KillTimeout:       time.Second,
		Reattach:          map[string]host.ReattachConfig{}, // not the environment's
	}
}

func load(t *testing.T, path string, opts host.Options) *host.Plugin {
	t.Helper()
	p, err := host.Load(t.Context(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// processesUnder returns the pids of the processes whose executable is under dir, from the
// process table (/proc).
func processesUnder(dir string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil {
			continue // gone, a zombie, or a kernel thread
		}
		if strings.HasPrefix(exe, dir+string(filepath.Separator)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

func alive(pid int) bool {
	// A zombie still answers signal 0; its /proc exe link is gone.
	_, err := os.Readlink(filepath.Join("/proc", strconv.Itoa(pid), "exe"))
	return err == nil
}

// eventually polls cond every 20ms until it holds or d passes.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// within runs f and fails the test when it takes longer than d.
func within[T any](t *testing.T, d time.Duration, what string, f func() T) T {
	t.Helper()
	start := time.Now()
	v := f()
	if took := time.Since(start); took > d {
		t.Errorf("%s took %s, want at most %s", what, took.Round(time.Millisecond), d)
	}
	return v
}

// logBuffer is a logger whose output tests can read.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		fmt.Fprintf(&b.buf, "%s %s\n", prefix, args)
	}, funcr.Options{Verbosity: 1})
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
