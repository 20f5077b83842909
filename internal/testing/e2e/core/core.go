// Package core runs upstream Jumpstarter's core controller (`jumpstarter-controller`, kept
// in ../shared/tools/upstream, never in the project) as a host process against a test API
// server: the real issuer of exporter credentials, the real server of the exporters'
// ControllerService and the real lease scheduler, in place of jumpsim's core.
//
// The tier makes the TLS material: a CA, which [Core.CAPEM] returns for the namespace's
// jumpstarter-service-ca-cert ConfigMap (what the provisioner puts into every exporter
// config as tls.ca), and a serving certificate for the endpoint's address.
package core

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	pb "github.com/exporterset/exporterset/internal/testing/e2e/standin/jumpstarterpb"
	"github.com/exporterset/exporterset/internal/testing/testproc"
)

// GRPCPort is the port upstream's controller serves its gRPC on, on every interface
// (fixed upstream: one controller per machine at a time).
const GRPCPort = 8082

// ConfigMapName is the ConfigMap upstream's controller reads its configuration from, in
// the namespace it watches.
const ConfigMapName = "jumpstarter-controller"

// Options say what to run against.
type Options struct {
	// Binary is upstream's jumpstarter-controller.
	Binary string
	// Kubeconfig is a cluster-admin kubeconfig of the API server.
	Kubeconfig string
	// Namespace is the one namespace the controller watches (its NAMESPACE).
	Namespace string
	// Host is the IP address the exporters dial (GRPC_ENDPOINT is Host:GRPCPort) and the
	// serving certificate is made for.
	Host string
	// Dir receives the certificate, key and the controller's log (jumpstarter-controller.log).
	Dir string
	// Bridge, when set, is the only interface besides loopback from which the gRPC port
	// may be reached (iptables rules on INPUT, removed by Stop; needs root).
	Bridge string
}

// Core is a running (or stopped) upstream controller.
type Core struct {
	opts  Options
	certs *certs
	cmd   *exec.Cmd
	done  chan struct{}
	// lock is the machine-wide lock held from Start to Stop (acquireLock).
	lock *os.File
	// Log is the path of the controller's log; every start appends to it.
	Log string
	// ProbeRefusals counts the readiness probe's calls refused "authenticator not
	// initialized", over every start: the log holds exactly these when no exporter met it.
	ProbeRefusals int
}

// Binary returns upstream's controller binary beside the repository root
// (../shared/tools/upstream/jumpstarter-controller), or an error saying it is absent.
func Binary(repoRoot string) (string, error) {
	p := filepath.Join(filepath.Dir(repoRoot), "shared", "tools", "upstream", "jumpstarter-controller")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("upstream's core controller not found: %w", err)
	}
	return p, nil
}

// Endpoint is the address exporters are given (status.endpoint).
func (c *Core) Endpoint() string { return net.JoinHostPort(c.opts.Host, fmt.Sprint(GRPCPort)) }

// CAPEM is the CA the exporters must trust.
func (c *Core) CAPEM() []byte { return c.certs.caPEM }

// Start makes the certificates, writes the controller's ConfigMap and starts it; it returns
// once the gRPC port answers TLS with the tier's certificate. It first waits for any other
// Core on the machine, in this process or another, to be stopped (one at a time: the ports
// are fixed).
func Start(ctx context.Context, cl client.Client, o Options) (_ *Core, err error) {
	ip := net.ParseIP(o.Host)
	if ip == nil {
		return nil, fmt.Errorf("host %q is not an IP address", o.Host)
	}
	lock, err := acquireLock(ctx)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			lock.Close()
		}
	}()
	cs, err := newCerts([]net.IP{ip, net.ParseIP("127.0.0.1")})
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	for name, b := range map[string][]byte{"tls.crt": cs.certPEM, "tls.key": cs.keyPEM, "ca.crt": cs.caPEM} {
		if err := os.WriteFile(filepath.Join(o.Dir, name), b, 0o600); err != nil {
			return nil, err
		}
	}
	if err := writeConfigMap(ctx, cl, o.Namespace); err != nil {
		return nil, err
	}
	if o.Bridge != "" {
		if err := openFirewall(o.Bridge); err != nil {
			return nil, err
		}
	}
	c := &Core{opts: o, certs: cs, lock: lock, Log: filepath.Join(o.Dir, "jumpstarter-controller.log")}
	if err := c.Restart(); err != nil {
		c.signal(syscall.SIGKILL, 0)
		if o.Bridge != "" {
			closeFirewall(o.Bridge)
		}
		return nil, err
	}
	return c, nil
}

// writeConfigMap is the configuration it was seen to start with: internal tokens only, no
// provisioning, an unused router.
func writeConfigMap(ctx context.Context, cl client.Client, ns string) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: ns}}
	_, err := controllerutil.CreateOrUpdate(ctx, cl, cm, func() error {
		cm.Data = map[string]string{
			"config": `authentication:
  internal:
    prefix: "internal:"
provisioning:
  enabled: false
grpc:
  keepalive:
    minTime: 1s
    permitWithoutStream: true
`,
			"router": `default:
  endpoint: router.e2e.invalid:443
`,
		}
		return nil
	})
	return err
}

// Restart starts the controller process (again, after Kill or Stop) and waits until its
// gRPC port serves the tier's certificate.
func (c *Core) Restart() error {
	if c.cmd != nil {
		select {
		case <-c.done:
		default:
			return errors.New("the controller is still running")
		}
	}
	f, err := os.OpenFile(c.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	probe, err := testproc.FreePort()
	if err != nil {
		return err
	}
	// The kubeconfig as a flag as well: a teardown that looks for processes naming the
	// tier's state directory in their command line then finds this one too.
	cmd := exec.Command(c.opts.Binary, "--kubeconfig", c.opts.Kubeconfig,
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", probe), "--metrics-bind-address", "0")
	cmd.Env = append(os.Environ(),
		"NAMESPACE="+c.opts.Namespace,
		"KUBECONFIG="+c.opts.Kubeconfig,
		"CONTROLLER_KEY=e2e-controller-key-"+c.opts.Namespace,
		"ROUTER_KEY=e2e-router-key-"+c.opts.Namespace,
		"GRPC_ENDPOINT="+c.Endpoint(),
		"EXTERNAL_CERT_PEM="+filepath.Join(c.opts.Dir, "tls.crt"),
		"EXTERNAL_KEY_PEM="+filepath.Join(c.opts.Dir, "tls.key"),
	)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return fmt.Errorf("starting %s: %w", c.opts.Binary, err)
	}
	c.cmd, c.done = cmd, make(chan struct{})
	go func() { _ = cmd.Wait(); f.Close(); close(c.done) }()
	return c.waitServing(time.Minute)
}

// waitServing waits for a TLS handshake on the gRPC port that verifies against the CA,
// then for the controller to judge tokens: its authenticator loads the controller's own
// OIDC discovery document some seconds after the port opens, and until then every
// exporter is refused with "authenticator not initialized".
func (c *Core) waitServing(timeout time.Duration) error {
	if err := c.waitTLS(timeout); err != nil {
		return err
	}
	return c.waitAuthn(timeout)
}

// probeToken is a JWT that only claims the issuer of upstream's internal tokens (its own
// OIDC signer at https://localhost:8085, whose discovery document its authenticator loads),
// unsigned. A token of another shape, or of another issuer, is refused before the
// authenticator is asked, so it cannot tell whether the authenticator is ready: the tier's
// first probe used "not-a-token", passed at once, and the first exporter was then refused
// "authenticator not initialized" for 8 s (the sample pool's first instance registered 10.1 s
// after its set, 8 s of them this wait: a start of the tier's core, not the path a user meets).
func probeToken() string {
	enc := base64.RawURLEncoding.EncodeToString
	header := enc([]byte(`{"alg":"RS256","typ":"JWT"}`))
	claims := enc(fmt.Appendf(nil, `{"iss":"https://localhost:8085","sub":"readiness-probe","aud":"jumpstarter","exp":%d}`, time.Now().Add(time.Hour).Unix()))
	return header + "." + claims + "." + enc([]byte("unsigned"))
}

// waitAuthn calls ReportStatus with probeToken until the refusal is about the token rather
// than about the authenticator.
func (c *Core) waitAuthn(timeout time.Duration) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.certs.caPEM)
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", GRPCPort),
		grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctrl := pb.NewControllerServiceClient(conn)
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+probeToken(), "jumpstarter-kind", "Exporter",
			"jumpstarter-namespace", c.opts.Namespace, "jumpstarter-name", "readiness-probe")
		_, err := ctrl.ReportStatus(ctx, &pb.ReportStatusRequest{})
		cancel()
		if err != nil && !strings.Contains(err.Error(), "not initialized") {
			return nil
		}
		if err != nil {
			c.ProbeRefusals++
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("jumpstarter-controller does not authenticate after %s: %v", timeout, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// waitTLS waits for a TLS handshake on the gRPC port that verifies against the CA.
func (c *Core) waitTLS(timeout time.Duration) error {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(c.certs.caPEM)
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-c.done:
			return fmt.Errorf("jumpstarter-controller exited; see %s:\n%s", c.Log, tail(c.Log, 20))
		default:
		}
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: time.Second}, "tcp", fmt.Sprintf("127.0.0.1:%d", GRPCPort),
			&tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{"h2"}})
		if err == nil {
			conn.Close()
			return nil
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("jumpstarter-controller's gRPC port does not serve the tier's certificate after %s: %v", timeout, last)
}

// Kill ends the process at once (SIGKILL), as a crash would.
func (c *Core) Kill() {
	c.signal(syscall.SIGKILL, 0)
}

// Stop ends the process with SIGTERM, then SIGKILL after 10 s, removes the firewall rules
// and lets the next Core on the machine start.
func (c *Core) Stop() {
	c.signal(syscall.SIGTERM, 10*time.Second)
	if c != nil && c.opts.Bridge != "" {
		closeFirewall(c.opts.Bridge)
	}
	if c != nil && c.lock != nil {
		c.lock.Close()
		c.lock = nil
	}
}

func (c *Core) signal(sig syscall.Signal, grace time.Duration) {
	if c == nil || c.cmd == nil {
		return
	}
	select {
	case <-c.done:
		return
	default:
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, sig)
	select {
	case <-c.done:
	case <-time.After(grace):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.done
	}
}

// Lines returns the log lines that contain any of words.
func (c *Core) Lines(words ...string) []string {
	b, _ := os.ReadFile(c.Log)
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		for _, w := range words {
			if strings.Contains(l, w) {
				out = append(out, l)
				break
			}
		}
	}
	return out
}

// Count is the number of log lines that contain every one of words.
func (c *Core) Count(words ...string) int {
	b, _ := os.ReadFile(c.Log)
	n := 0
	for _, l := range strings.Split(string(b), "\n") {
		all := true
		for _, w := range words {
			all = all && strings.Contains(l, w)
		}
		if all {
			n++
		}
	}
	return n
}

func tail(path string, n int) string {
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
