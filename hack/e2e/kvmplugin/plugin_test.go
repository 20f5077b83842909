package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// pluginBin is the plugin built by TestMain: the test runs it as the e2e tier does.
var pluginBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kvmplugin-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pluginBin = filepath.Join(dir, "kvmplugin")
	if out, err := exec.Command("go", "build", "-o", pluginBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fakeKubelet is the kubelet's Registration service on kubelet.sock.
type fakeKubelet struct {
	pluginapi.UnimplementedRegistrationServer
	got chan *pluginapi.RegisterRequest
	srv *grpc.Server
}

func (k *fakeKubelet) Register(_ context.Context, r *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	k.got <- r
	return &pluginapi.Empty{}, nil
}

func startKubelet(t *testing.T, dir string) *fakeKubelet {
	t.Helper()
	ln, err := net.Listen("unix", filepath.Join(dir, "kubelet.sock"))
	if err != nil {
		t.Fatal(err)
	}
	k := &fakeKubelet{got: make(chan *pluginapi.RegisterRequest, 4), srv: grpc.NewServer()}
	pluginapi.RegisterRegistrationServer(k.srv, k)
	go func() { _ = k.srv.Serve(ln) }()
	t.Cleanup(k.srv.Stop)
	return k
}

func (k *fakeKubelet) registration(t *testing.T) *pluginapi.RegisterRequest {
	t.Helper()
	select {
	case r := <-k.got:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no registration within 10s")
		return nil
	}
}

// syncBuffer is the plugin's log, written by the process and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func dialPlugin(t *testing.T, path string) pluginapi.DevicePluginClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return pluginapi.NewDevicePluginClient(conn)
}

// checkServes checks what the kubelet asks of a registered plugin: the device list, and
// the device spec for each container.
func checkServes(t *testing.T, c pluginapi.DevicePluginClient, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.GetDevicePluginOptions(ctx, &pluginapi.Empty{}); err != nil {
		t.Fatalf("GetDevicePluginOptions: %v", err)
	}
	stream, err := c.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		t.Fatal(err)
	}
	list, err := stream.Recv()
	if err != nil {
		t.Fatalf("ListAndWatch: %v", err)
	}
	if len(list.Devices) != n {
		t.Errorf("ListAndWatch: %d devices, want %d", len(list.Devices), n)
	}
	for i, d := range list.Devices {
		if d.ID != fmt.Sprintf("kvm-%d", i) || d.Health != pluginapi.Healthy {
			t.Errorf("device %d: %v", i, d)
		}
	}
	resp, err := c.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{
		{DevicesIds: []string{"kvm-0"}}, {DevicesIds: []string{fmt.Sprintf("kvm-%d", n-1)}},
	}})
	if err != nil {
		t.Fatalf("Allocate: %v", err)
	}
	if len(resp.ContainerResponses) != 2 {
		t.Fatalf("Allocate: %v", resp)
	}
	for _, cr := range resp.ContainerResponses {
		if len(cr.Devices) != 1 || cr.Devices[0].ContainerPath != "/dev/kvm" || cr.Devices[0].HostPath != "/dev/null" || cr.Devices[0].Permissions != "rw" {
			t.Errorf("Allocate gave %v", cr.Devices)
		}
	}
	_, err = c.Allocate(ctx, &pluginapi.AllocateRequest{ContainerRequests: []*pluginapi.ContainerAllocateRequest{{DevicesIds: []string{"gpu-0"}}}})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("Allocate of an unknown device: %v", err)
	}
}

func TestPluginRegistersServesAndReregisters(t *testing.T) {
	dir := t.TempDir()
	const n = 3
	var logs syncBuffer
	cmd := exec.Command(pluginBin, "--socket-dir", dir, "--devices", fmt.Sprint(n), "--host-path", "/dev/null", "--poll", "100ms")
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	time.Sleep(300 * time.Millisecond) // the plugin starts before the kubelet and waits for it

	kubelet := startKubelet(t, dir)
	r := kubelet.registration(t)
	if r.Version != "v1beta1" || r.ResourceName != "devices.kubevirt.io/kvm" || r.Endpoint != "kvm-e2e.sock" {
		t.Errorf("registration %v", r)
	}
	checkServes(t, dialPlugin(t, filepath.Join(dir, r.Endpoint)), n)

	// A kubelet restart: the old kubelet goes, the new one empties the directory and listens.
	kubelet.srv.Stop()
	if err := os.Remove(filepath.Join(dir, r.Endpoint)); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, "kubelet.sock")) // if Stop left it
	kubelet = startKubelet(t, dir)
	r = kubelet.registration(t)
	if r.ResourceName != "devices.kubevirt.io/kvm" {
		t.Errorf("second registration %v", r)
	}
	checkServes(t, dialPlugin(t, filepath.Join(dir, r.Endpoint)), n)

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("after SIGTERM: %v\n%s", err, &logs)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("still running 10s after SIGTERM\n%s", &logs)
	}
	if _, err := os.Stat(filepath.Join(dir, "kvm-e2e.sock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("plugin socket after SIGTERM: %v", err)
	}
	t.Logf("plugin log:\n%s", &logs)
}

func TestHostPathMustExist(t *testing.T) {
	out, err := exec.Command(pluginBin, "--socket-dir", t.TempDir(), "--host-path", "/dev/absent-kvm").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 || string(out) != "kvmplugin: --host-path: stat /dev/absent-kvm: no such file or directory\n" {
		t.Errorf("%v: %q", err, out)
	}
}
