package provisionertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/exporterset/exporterset/provisioner/plugin"
	"github.com/exporterset/exporterset/provisioner/plugin/host"
)

// BuildPlugin builds the main package pkg (an import path, or a directory such as ".") with
// `go build` into dir under the plugin file name exporterset-provisioner-<name>, and returns
// the binary's path. An empty dir is a new temporary directory; an empty name is pkg's last
// path element. The build runs in the test's working directory, so relative paths work.
func BuildPlugin(t testing.TB, dir, pkg, name string) string {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	if name == "" {
		abs := pkg
		if strings.HasPrefix(pkg, ".") {
			if a, err := filepath.Abs(pkg); err == nil {
				abs = a
			}
		}
		name = strings.TrimPrefix(filepath.Base(abs), plugin.BinaryPrefix)
	}
	out := filepath.Join(dir, plugin.BinaryPrefix+name)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool(), "build", "-o", out, pkg)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -o %s %s: %v\n%s", out, pkg, err, b)
	}
	return out
}

// goTool is the go command of the toolchain running the test when it can be found, so that the
// plugin is built with the same Go as the test.
func goTool() string {
	if root := os.Getenv("GOROOT"); root != "" {
		if p := filepath.Join(root, "bin", "go"); fileExists(p) {
			return p
		}
	}
	if out, err := exec.Command("go", "env", "GOROOT").Output(); err == nil {
		if p := filepath.Join(strings.TrimSpace(string(out)), "bin", "go"); fileExists(p) {
			return p
		}
	}
	return "go"
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// LoadPlugin starts the plugin binary at path through the host, as the controller does
// (handshake, AutoMTLS, gRPC), and returns it as a provisioner. It is closed, its process
// ended, when the test ends. Its logs go to t.Log.
func LoadPlugin(t testing.TB, path string) *host.Plugin {
	t.Helper()
	return LoadPluginWithOptions(t, path, host.Options{})
}

// LoadPluginWithOptions is LoadPlugin with host options (timeouts, checksums); a zero Logger
// logs to t.Log.
func LoadPluginWithOptions(t testing.TB, path string, opts host.Options) *host.Plugin {
	t.Helper()
	if opts.Logger.GetSink() == nil {
		opts.Logger = Logger(t)
	}
	p, err := host.Load(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("loading plugin %s: %v", path, err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// Logger returns a logger writing to t.Log at verbosity 1, which goes quiet once the test has
// ended: plugin processes may still write while they are being killed, and t.Log after the
// end of a test panics.
func Logger(t testing.TB) logr.Logger {
	var mu sync.Mutex
	done := false
	t.Cleanup(func() {
		mu.Lock()
		done = true
		mu.Unlock()
	})
	return funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		if !done {
			t.Log(fmt.Sprintf("%s %s", prefix, args))
		}
	}, funcr.Options{Verbosity: 1})
}
