package baremetal

import (
	"context"
	"testing"
	"time"

	"github.com/exporterset/exporterset/internal/testing/labhost"
)

// The lab itself (sshd hosts in network namespaces) is internal/testing/labhost; this file
// shows it as the package's tests use it, with each host as a Host of this package.

// labHost is one real sshd in a network namespace of its own, as the lab test uses it.
type labHost struct {
	host   Host
	ns     string
	hostPK []byte // the host's public key line, for known_hosts
	// veth is the host side of its link, in ns: setting it down cuts the host off.
	veth string
	// rootDir is what the host sees at labEnv.hostRoot, as this process sees it.
	rootDir string
}

// labEnv is the lab: the hosts, the authorized client key and a key the hosts do not know.
type labEnv struct {
	lab           *labhost.Lab
	hosts         []labHost
	clientKey     []byte
	strangerKey   []byte
	wrongHostLine string // a host key no lab host has
	dir           string
	// hostRoot is a directory each host sees as its own (labhost.Lab.HostRoot).
	hostRoot string
}

// requireLab skips unless the machine can run the lab (labhost.Require).
func requireLab(t *testing.T) {
	t.Helper()
	labhost.Require(t)
}

// run runs a setup command and fails the test with its output.
func run(t *testing.T, name string, args ...string) {
	t.Helper()
	labhost.Run(t, name, args...)
}

// startLab starts n lab hosts (2 slots each) and registers their teardown.
func startLab(t *testing.T, n int) *labEnv {
	t.Helper()
	l := labhost.Start(t, n)
	env := &labEnv{lab: l, clientKey: l.ClientKey, strangerKey: l.StrangerKey, wrongHostLine: l.WrongHostLine,
		dir: l.Dir, hostRoot: l.HostRoot}
	for _, h := range l.Hosts {
		env.hosts = append(env.hosts, labHost{
			host:    Host{Name: h.Name, Address: h.Address, Port: h.Port, Arch: "x86_64", Slots: 2},
			ns:      h.NS,
			hostPK:  h.HostKey,
			veth:    h.Veth,
			rootDir: h.RootDir,
		})
	}
	return env
}

// knownHosts returns a known_hosts document trusting every lab host's real key.
func (e *labEnv) knownHosts() []byte { return e.lab.KnownHosts() }

// credentials parses the given key and known_hosts or fails the test.
func credentials(t *testing.T, key, knownHosts []byte) *Credentials {
	t.Helper()
	c, err := ParseCredentials(map[string][]byte{SecretKeyPrivateKey: key, SecretKeyKnownHosts: knownHosts})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// dial connects to h or fails the test, closing the client at cleanup.
func dial(t *testing.T, h Host, creds *Credentials) *Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := Dial(ctx, h, "root", creds)
	if err != nil {
		t.Fatalf("dial %s: %v", h.Name, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
