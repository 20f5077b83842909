package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	pb "github.com/exporterset/exporterset/internal/testing/e2e/standin/jumpstarterpb"
)

// controller is a ControllerService on loopback TLS that records what the exporter calls,
// so that the client's side of the protocol is checked here; upstream's own controller is
// the e2e tier's counterpart (TestSamplePoolOnRealCore).
type controller struct {
	pb.UnimplementedControllerServiceServer
	addr  string
	caPEM []byte
	cert  tls.Certificate
	srv   *grpc.Server

	mu    sync.Mutex
	calls []string
	// status feeds the open Status stream.
	status chan *pb.StatusResponse
	// current is the lease state a new Status stream starts with, as upstream's starts with
	// the Exporter's leaseRef.
	current *pb.StatusResponse
}

func startController(t *testing.T) *controller {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test controller"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c := &controller{addr: ln.Addr().String(), caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, status: make(chan *pb.StatusResponse, 4)}
	c.serve(ln)
	t.Cleanup(func() { c.srv.Stop() })
	return c
}

func (c *controller) serve(ln net.Listener) {
	c.srv = grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{c.cert}})))
	pb.RegisterControllerServiceServer(c.srv, c)
	go func() { _ = c.srv.Serve(ln) }()
}

// restart stops the server (every stream breaks) and serves again on the same address.
func (c *controller) restart(t *testing.T) {
	t.Helper()
	c.srv.Stop()
	ln, err := net.Listen("tcp", c.addr)
	if err != nil {
		t.Fatal(err)
	}
	c.serve(ln)
}

// record notes a call, with the bearer token it came with.
func (c *controller) record(ctx context.Context, call string) {
	md, _ := metadata.FromIncomingContext(ctx)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, fmt.Sprintf("%s [%s %s %s/%s]", call, strings.Join(md.Get("authorization"), ","),
		strings.Join(md.Get("jumpstarter-kind"), ","), strings.Join(md.Get("jumpstarter-namespace"), ","), strings.Join(md.Get("jumpstarter-name"), ",")))
}

func (c *controller) Register(ctx context.Context, r *pb.RegisterRequest) (*pb.RegisterResponse, error) {
	var names []string
	for _, d := range r.Reports {
		names = append(names, d.Labels["jumpstarter.dev/name"])
	}
	c.record(ctx, fmt.Sprintf("Register %d labels, devices %s", len(r.Labels), strings.Join(names, ",")))
	return &pb.RegisterResponse{Uuid: "uid-1"}, nil
}

func (c *controller) ReportStatus(ctx context.Context, r *pb.ReportStatusRequest) (*pb.ReportStatusResponse, error) {
	release := ""
	if r.GetReleaseLease() {
		release = " release"
	}
	c.record(ctx, fmt.Sprintf("ReportStatus %s %q%s", r.Status, r.GetMessage(), release))
	return &pb.ReportStatusResponse{}, nil
}

func (c *controller) Unregister(ctx context.Context, r *pb.UnregisterRequest) (*pb.UnregisterResponse, error) {
	c.record(ctx, "Unregister "+r.Reason)
	return &pb.UnregisterResponse{}, nil
}

func (c *controller) Status(_ *pb.StatusRequest, s pb.ControllerService_StatusServer) error {
	c.record(s.Context(), "Status")
	c.mu.Lock()
	st := c.current
	c.mu.Unlock()
	if st == nil {
		st = &pb.StatusResponse{}
	}
	if err := s.Send(st); err != nil {
		return err
	}
	for {
		select {
		case <-s.Context().Done():
			return nil
		case st := <-c.status:
			c.mu.Lock()
			c.current = st
			c.mu.Unlock()
			if err := s.Send(st); err != nil {
				return err
			}
		}
	}
}

// waitCalls waits until the calls recorded are want, in order.
func (c *controller) waitCalls(t *testing.T, want []string, stderr *bytes.Buffer) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c.mu.Lock()
		got := strings.Join(c.calls, "\n")
		c.mu.Unlock()
		if got == strings.Join(want, "\n") {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("calls:\n%s\nwant:\n%s\nstderr:\n%s", got, strings.Join(want, "\n"), stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (c *controller) config(exitOnLeaseEnd bool) string {
	return fmt.Sprintf(`apiVersion: jumpstarter.dev/v1alpha1
kind: ExporterConfig
metadata: {name: pool-abcde, namespace: lab}
endpoint: %s
tls: {ca: %s, insecure: false}
token: tok
exitOnLeaseEnd: %t
export:
  qemu: {type: jumpstarter_driver_qemu.driver.Qemu, config: {arch: x86_64}}
`, c.addr, base64.StdEncoding.EncodeToString(c.caPEM), exitOnLeaseEnd)
}

func lease(name string) *pb.StatusResponse {
	client := "alice"
	return &pb.StatusResponse{Leased: true, LeaseName: &name, ClientName: &client}
}

const (
	callRegister  = "Register 0 labels, devices pool-abcde,qemu [Bearer tok Exporter lab/pool-abcde]"
	callAvailable = `ReportStatus EXPORTER_STATUS_AVAILABLE "Exporter registered and available" [Bearer tok Exporter lab/pool-abcde]`
	callStatus    = "Status [Bearer tok Exporter lab/pool-abcde]"
	callReady     = `ReportStatus EXPORTER_STATUS_LEASE_READY "Ready for commands" [Bearer tok Exporter lab/pool-abcde]`
)

// With exitOnLeaseEnd, the end of the lease the controller streamed ends the exporter
// cleanly: Offline, Unregister, exit 0.
func TestRunServesOneLeaseThenExits(t *testing.T) {
	c := startController(t)
	p := newPod(t, c.config(true), true, true)
	cmd, stderr := p.start(t)
	c.waitCalls(t, []string{callRegister, callAvailable, callStatus}, stderr)
	c.status <- lease("l1")
	c.waitCalls(t, []string{callRegister, callAvailable, callStatus, callReady}, stderr)
	c.status <- &pb.StatusResponse{}
	if code := wait(t, cmd, 10*time.Second); code != 0 {
		t.Errorf("exit status %d, want 0\n%s", code, stderr)
	}
	c.waitCalls(t, []string{callRegister, callAvailable, callStatus, callReady,
		`ReportStatus EXPORTER_STATUS_OFFLINE "lease l1 ended (exitOnLeaseEnd)" [Bearer tok Exporter lab/pool-abcde]`,
		"Unregister lease l1 ended (exitOnLeaseEnd) [Bearer tok Exporter lab/pool-abcde]"}, stderr)
}

// Without exitOnLeaseEnd the exporter is available again after a lease, and a SIGTERM
// unregisters it.
func TestRunServesLeasesUntilStopped(t *testing.T) {
	c := startController(t)
	p := newPod(t, c.config(false), true, true)
	cmd, stderr := p.start(t)
	c.waitCalls(t, []string{callRegister, callAvailable, callStatus}, stderr)
	c.status <- lease("l1")
	c.status <- &pb.StatusResponse{}
	again := `ReportStatus EXPORTER_STATUS_AVAILABLE "Available for new lease" [Bearer tok Exporter lab/pool-abcde]`
	c.waitCalls(t, []string{callRegister, callAvailable, callStatus, callReady, again}, stderr)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := wait(t, cmd, 10*time.Second); code != 0 {
		t.Errorf("exit status %d, want 0\n%s", code, stderr)
	}
	c.waitCalls(t, []string{callRegister, callAvailable, callStatus, callReady, again,
		`ReportStatus EXPORTER_STATUS_OFFLINE "terminated" [Bearer tok Exporter lab/pool-abcde]`, "Unregister terminated [Bearer tok Exporter lab/pool-abcde]"}, stderr)
}

// A controller restart mid-lease breaks the Status stream: the exporter connects again and
// registers again, and the lease it still holds is neither ended nor announced twice.
func TestRunKeepsItsLeaseAcrossAControllerRestart(t *testing.T) {
	c := startController(t)
	p := newPod(t, c.config(true), true, true)
	cmd, stderr := p.start(t)
	c.waitCalls(t, []string{callRegister, callAvailable, callStatus}, stderr)
	c.status <- lease("l1")
	c.waitCalls(t, []string{callRegister, callAvailable, callStatus, callReady}, stderr)
	c.restart(t)
	// The new Status stream starts with the state the controller knows: still leased.
	c.waitCalls(t, []string{callRegister, callAvailable, callStatus, callReady, callRegister, callStatus}, stderr)
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("jmp gone after a controller restart: %v\n%s", err, stderr)
	}
	c.status <- &pb.StatusResponse{}
	if code := wait(t, cmd, 10*time.Second); code != 0 {
		t.Errorf("exit status %d, want 0\n%s", code, stderr)
	}
}
