package baremetal

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"fmt"
	"path"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// The fake lab: hosts that answer the Machine scripts from memory, reached through a
// DialFunc, so the Provisioner's glue and connection cache are tested without SSH or root.

// fakeInstance is an instance directory on a fake host.
type fakeInstance struct {
	meta   string
	config []byte
	// qemu and exporter are the processes' states as the status script prints them
	// ("exited:3", "exited", ...); "" is running.
	qemu, exporter string
}

// fakeHost is one fake lab host.
type fakeHost struct {
	mu        sync.Mutex
	instances map[string]*fakeInstance // by directory
	// dialErr, when set, is what dialling the host returns.
	dialErr error
	// dead makes kept connections fail: ping and Run return *UnreachableError (unless
	// hang is set).
	dead bool
	// failRuns makes that many next Runs fail with *UnreachableError.
	failRuns int
	// delay slows every Run down, to overlap calls.
	delay time.Duration
	// hang makes Run ignore its context and block until the connection is closed.
	hang                bool
	dials, closes, runs int
}

// fakeLab is a set of fake hosts by name.
type fakeLab struct {
	mu    sync.Mutex
	hosts map[string]*fakeHost
	// dialDelay slows dials down, to overlap them.
	dialDelay time.Duration
}

func newFakeLab(names ...string) *fakeLab {
	l := &fakeLab{hosts: map[string]*fakeHost{}}
	for _, n := range names {
		l.hosts[n] = &fakeHost{instances: map[string]*fakeInstance{}}
	}
	return l
}

func (l *fakeLab) host(name string) *fakeHost {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.hosts[name]
}

// dial is the lab's DialFunc.
func (l *fakeLab) dial(ctx context.Context, h Host, _ string, creds *Credentials) (Conn, error) {
	if creds == nil {
		return nil, fmt.Errorf("no credentials")
	}
	if l.dialDelay > 0 {
		time.Sleep(l.dialDelay)
	}
	fh := l.host(h.Name)
	if fh == nil {
		return nil, &UnreachableError{Host: h.Name, Address: hostAddress(h), Err: fmt.Errorf("no such fake host")}
	}
	fh.mu.Lock()
	defer fh.mu.Unlock()
	fh.dials++
	if fh.dialErr != nil {
		return nil, fh.dialErr
	}
	return &fakeConn{h: h, fh: fh, closed: make(chan struct{})}, nil
}

// fakeConn is a connection to a fake host.
type fakeConn struct {
	h         Host
	fh        *fakeHost
	closeOnce sync.Once
	closed    chan struct{}
}

func (c *fakeConn) Close() error {
	c.closeOnce.Do(func() {
		c.fh.mu.Lock()
		c.fh.closes++
		c.fh.mu.Unlock()
		close(c.closed)
	})
	return nil
}

func (c *fakeConn) unreachable(why string) error {
	return &UnreachableError{Host: c.h.Name, Address: hostAddress(c.h), Err: fmt.Errorf("%s", why)}
}

func (c *fakeConn) ping(context.Context) error {
	c.fh.mu.Lock()
	defer c.fh.mu.Unlock()
	if c.fh.dead {
		return c.unreachable("keepalive: connection lost")
	}
	return nil
}

// Run answers the Machine scripts (argv is sh -c SCRIPT NAME ARGS...).
func (c *fakeConn) Run(ctx context.Context, argv []string, stdin []byte) ([]byte, []byte, error) {
	select {
	case <-c.closed:
		return nil, nil, c.unreachable("use of closed connection")
	default:
	}
	c.fh.mu.Lock()
	c.fh.runs++
	delay, hang := c.fh.delay, c.fh.hang
	if !hang && (c.fh.dead || c.fh.failRuns > 0) {
		if c.fh.failRuns > 0 {
			c.fh.failRuns--
		}
		c.fh.mu.Unlock()
		return nil, nil, c.unreachable("connection reset by peer")
	}
	c.fh.mu.Unlock()
	if hang {
		<-c.closed
		return nil, nil, c.unreachable("connection closed")
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
	if len(argv) < 5 || argv[0] != "sh" || argv[1] != "-c" {
		return nil, nil, fmt.Errorf("fake host: unexpected argv %q", argv)
	}
	name, args := argv[3], argv[4:]
	c.fh.mu.Lock()
	defer c.fh.mu.Unlock()
	var out strings.Builder
	switch name {
	case "inventory":
		dirs := make([]string, 0, len(c.fh.instances))
		for d := range c.fh.instances {
			if strings.HasPrefix(d, args[0]+"/") {
				dirs = append(dirs, d)
			}
		}
		sort.Strings(dirs)
		for _, d := range dirs {
			fmt.Fprintf(&out, "%s%s\n%s\n", markMeta, path.Join(d, metaFile), c.fh.instances[d].meta)
		}
	case "status":
		in := c.fh.instances[args[0]]
		if in == nil {
			break
		}
		procs := [][2]string{{"qemu", in.qemu}, {"exporter", in.exporter}}
		for _, p := range procs {
			fmt.Fprintf(&out, "%s%s %s\n", markProc, p[0], cmp.Or(p[1], "running"))
		}
		fmt.Fprintf(&out, "%s%s\n%s\n", markMeta, path.Join(args[0], metaFile), in.meta)
		for _, p := range procs {
			if p[1] != "" {
				fmt.Fprintf(&out, "%s%s\n%s: boom\n", markLog, p[0], p[0])
			}
		}
	case "prepare":
		c.fh.instances[args[0]] = &fakeInstance{meta: args[1], config: append([]byte(nil), stdin...)}
	case "spawn-qemu", "spawn-exporter":
		if c.fh.instances[args[0]] == nil {
			return nil, nil, &CommandError{Host: c.h.Name, Command: name, ExitStatus: 1, Stderr: "no directory"}
		}
	case "stop":
		delete(c.fh.instances, args[0])
	default:
		return nil, nil, fmt.Errorf("fake host: unknown script %q", name)
	}
	return []byte(out.String()), nil, nil
}

// count returns how many instances h holds.
func (h *fakeHost) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.instances)
}

// set changes h under its lock.
func (h *fakeHost) set(f func(h *fakeHost)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h)
}

// testCredentials returns credentials Secret data: a fresh client key and a known_hosts line
// per address, each with a fresh host key (the fake lab does not check them).
func testCredentials(t *testing.T, addresses ...string) map[string][]byte {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	block, err := ssh.MarshalPrivateKey(priv, "test")
	if err != nil {
		t.Fatal(err)
	}
	var kh strings.Builder
	for _, a := range addresses {
		kh.WriteString(knownhosts.Line([]string{a}, newPublicKey(t)) + "\n")
	}
	return map[string][]byte{SecretKeyPrivateKey: pem.EncodeToMemory(block), SecretKeyKnownHosts: []byte(kh.String())}
}

// fakeParams are parameters for hosts lab1 (2 slots) and lab2 (1 slot).
const fakeParams = `{"hosts": [
	{"name": "lab1", "address": "10.0.0.1", "arch": "x86_64", "slots": 2},
	{"name": "lab2", "address": "10.0.0.2", "arch": "x86_64", "slots": 1}],
	"root": "/srv/es", "exporter": {"command": ["jmp", "run", "--exporter-config"]}}`

// testRequest builds the request of a set "pool" in namespace "team-a" whose class has
// params, the credentials Secret reference secret ("" for none) and reclaim policy Delete,
// with creds handed over as the reconciler would.
func testRequest(t *testing.T, params, secret string, creds map[string][]byte) *provisioner.Request {
	t.Helper()
	class := &vtv1alpha1.VirtualTargetClass{
		ObjectMeta: metav1.ObjectMeta{Name: "lab", Namespace: "team-a"},
		Spec: vtv1alpha1.VirtualTargetClassSpec{Provisioner: ProvisionerName, ReclaimPolicy: vtv1alpha1.ReclaimDelete,
			Parameters: &apiextensionsv1.JSON{Raw: []byte(params)}},
	}
	if secret != "" {
		class.Spec.CredentialsSecretRef = &corev1.LocalObjectReference{Name: secret}
	}
	set := &vtv1alpha1.ExporterSet{ObjectMeta: metav1.ObjectMeta{Name: "pool", Namespace: "team-a", UID: "set-uid"}}
	req, err := provisioner.NewRequest(set, class, provisioner.Images{})
	if err != nil {
		t.Fatal(err)
	}
	req.Credentials = creds
	return req
}

// forInstance returns req for the Exporter name (UID "uid-"+name) with annotations, and an
// exporter config.
func forInstance(req *provisioner.Request, name string, annotations map[string]string) *provisioner.Request {
	e := &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{
		Name: name, Namespace: req.Set.Namespace, UID: types.UID("uid-" + name), Annotations: annotations}}
	r := req.ForExporter(e, name+"-exporter-config")
	r.ExporterConfig = []byte("endpoint: grpc.example:443\ntoken: t-" + name + "\n")
	return r
}
