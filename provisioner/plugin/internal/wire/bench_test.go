package wire_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/plugin/host"
	"github.com/exporterset/exporterset/provisioner/plugin/internal/testprov"
	"github.com/exporterset/exporterset/provisioner/provisionertest"
)

// The two benchmarks render the same Pod with the same implementation (testprov, which parses
// its parameters and builds an exporter-and-target Pod), in process and through a plugin
// process (JSON encoding of the request's objects and the Pod, gRPC over a Unix socket with
// AutoMTLS, the host's deadline and bookkeeping). Their difference is the per-call cost of
// running a provisioner out of process.

func benchRequest(b *testing.B, p provisioner.Provisioner) *provisioner.Request {
	b.Helper()
	desc, err := p.Describe(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	req, err := provisionertest.Config{Parameters: `{"image": "busybox:1.36", "memory": "64Mi"}`}.NewRequest(desc)
	if err != nil {
		b.Fatal(err)
	}
	return req
}

func benchRenderPod(b *testing.B, p provisioner.Provisioner) {
	req := benchRequest(b, p)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.RenderPod(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRenderPodInProcess(b *testing.B) {
	benchRenderPod(b, testprov.Provisioner{})
}

// benchBinary builds the test plugin once per test binary: RunParallel calls its benchmark
// function several times.
var benchBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "plugin-bench-")
	if err != nil {
		return "", err
	}
	benchDir = dir
	path := filepath.Join(dir, "exporterset-provisioner-bench")
	if out, err := exec.Command("go", "build", "-o", path, "./internal/testprov/testplugin").CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return path, nil
})

var benchDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		_ = os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

func loadBenchPlugin(b *testing.B) *host.Plugin {
	b.Helper()
	path, err := benchBinary()
	if err != nil {
		b.Fatal(err)
	}
	p, err := host.Load(context.Background(), path, host.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Close() })
	return p
}

func BenchmarkRenderPodPlugin(b *testing.B) {
	benchRenderPod(b, loadBenchPlugin(b))
}

func BenchmarkRenderPodPluginParallel(b *testing.B) {
	p := loadBenchPlugin(b)
	req := benchRequest(b, p)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := p.RenderPod(context.Background(), req); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkRenderPodGRPCInMemory is the protocol alone (JSON and gRPC, no process, no TLS, no
// socket), to tell the encoding's share of the plugin overhead from the transport's.
func BenchmarkRenderPodGRPCInMemory(b *testing.B) {
	benchRenderPod(b, serve(b, testprov.Provisioner{}))
}
