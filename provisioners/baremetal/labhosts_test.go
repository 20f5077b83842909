package baremetal

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

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
	hosts         []labHost
	clientKey     []byte
	strangerKey   []byte
	wrongHostLine string // a host key no lab host has
	dir           string
	// hostRoot is a directory each host sees as its own (a per-host directory is bind-mounted
	// there in the host's mount namespace): the hosts share this machine's file system, and
	// a root shared by all of them would show every host's instances on each.
	hostRoot string
}

// requireLab skips unless the machine can run the lab: root, ip, sshd, ssh-keygen, not -short.
func requireLab(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("lab test needs real sshd hosts in network namespaces; skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("lab test needs root (ip netns, sshd); run as root")
	}
	for _, bin := range []string{"/usr/sbin/sshd"} {
		if _, err := os.Stat(bin); err != nil {
			t.Skipf("lab test needs %s (Debian package openssh-server): %v", bin, err)
		}
	}
	for _, bin := range []string{"ip", "ssh-keygen", "setsid"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("lab test needs %s (Debian packages iproute2, openssh-client, util-linux): %v", bin, err)
		}
	}
}

// run runs a setup command and fails the test with its output.
func run(t *testing.T, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// keygen makes an ed25519 key pair and returns the private key bytes and the public line.
func keygen(t *testing.T, dir, name string) ([]byte, []byte) {
	t.Helper()
	p := filepath.Join(dir, name)
	run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", p)
	priv, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := os.ReadFile(p + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return priv, bytes.TrimSpace(pub)
}

// startLab starts n lab hosts and registers their teardown.
func startLab(t *testing.T, n int) *labEnv {
	t.Helper()
	dir := t.TempDir()
	env := &labEnv{dir: dir, hostRoot: filepath.Join(dir, "hostroot")}
	if err := os.Mkdir(env.hostRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	var clientPub []byte
	env.clientKey, clientPub = keygen(t, dir, "client")
	env.strangerKey, _ = keygen(t, dir, "stranger")
	_, wrong := keygen(t, dir, "wronghost")
	env.wrongHostLine = string(wrong)
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, append(clientPub, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	// sshd insists on its privilege separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}
	// Subnets from the pid, so two runs on one machine do not collide.
	base := os.Getpid() % 60 * 4
	for i := range n {
		env.hosts = append(env.hosts, startLabHost(t, env, authorized, i, base+i))
	}
	return env
}

// startLabHost starts host i: netns, veth pair 10.231.sub.1/30 (root side) and .2/30 (host
// side), sshd listening on .2:22, with its own directory mounted at env.hostRoot.
func startLabHost(t *testing.T, env *labEnv, authorized string, i, sub int) labHost {
	t.Helper()
	dir := env.dir
	tag := fmt.Sprintf("bm%d%d", os.Getpid()%100000, i)
	ns, vethRoot, vethNS := tag+"ns", tag+"r", tag+"n"
	run(t, "ip", "netns", "add", ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
	run(t, "ip", "link", "add", vethRoot, "type", "veth", "peer", "name", vethNS)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", vethRoot).Run() })
	run(t, "ip", "link", "set", vethNS, "netns", ns)
	rootAddr, nsAddr := fmt.Sprintf("10.231.%d.1", sub), fmt.Sprintf("10.231.%d.2", sub)
	run(t, "ip", "addr", "add", rootAddr+"/30", "dev", vethRoot)
	run(t, "ip", "link", "set", vethRoot, "up")
	run(t, "ip", "netns", "exec", ns, "ip", "addr", "add", nsAddr+"/30", "dev", vethNS)
	run(t, "ip", "netns", "exec", ns, "ip", "link", "set", vethNS, "up")
	run(t, "ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")

	hdir := filepath.Join(dir, fmt.Sprintf("host%d", i))
	if err := os.Mkdir(hdir, 0o700); err != nil {
		t.Fatal(err)
	}
	rootDir := filepath.Join(hdir, "root")
	if err := os.Mkdir(rootDir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, hostPub := keygen(t, hdir, "ssh_host_ed25519_key")
	cfg := filepath.Join(hdir, "sshd_config")
	conf := strings.Join([]string{
		"ListenAddress " + nsAddr,
		"Port 22",
		"HostKey " + filepath.Join(hdir, "ssh_host_ed25519_key"),
		"AuthorizedKeysFile " + authorized,
		"PermitRootLogin prohibit-password",
		"PasswordAuthentication no",
		"KbdInteractiveAuthentication no",
		"UsePAM no",
		"StrictModes no",
		"PidFile " + filepath.Join(hdir, "sshd.pid"),
		"LogLevel VERBOSE",
		"UseDNS no",
		"PrintMotd no",
		"PrintLastLog no",
		"",
	}, "\n")
	if err := os.WriteFile(cfg, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	// `ip netns exec` runs sshd in a mount namespace of its own whose mounts do not propagate
	// back, so the bind mount is seen by this host's sessions (and what they start) only.
	cmd := exec.Command("ip", "netns", "exec", ns, "sh", "-c", `mount --bind "$1" "$2" && exec /usr/sbin/sshd -D -e -f "$3"`,
		"sh", rootDir, env.hostRoot, cfg)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("sshd of lab%d:\n%s", i, logs.String())
		}
	})
	// Wait for the listener: sshd -D listens before it forks anything.
	addr := net.JoinHostPort(nsAddr, "22")
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err == nil {
			_ = c.Close()
			break
		}
		select {
		case <-done:
			t.Fatalf("sshd of lab%d exited:\n%s", i, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("sshd of lab%d not listening on %s: %v\n%s", i, addr, err, logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	return labHost{
		host:    Host{Name: fmt.Sprintf("lab%d", i+1), Address: nsAddr, Port: 22, Arch: "x86_64", Slots: 2},
		ns:      ns,
		hostPK:  hostPub,
		veth:    vethNS,
		rootDir: rootDir,
	}
}

// knownHosts returns a known_hosts document trusting every lab host's real key.
func (e *labEnv) knownHosts() []byte {
	var b strings.Builder
	for _, h := range e.hosts {
		fields := strings.Fields(string(h.hostPK))
		fmt.Fprintf(&b, "%s %s %s\n", h.host.Address, fields[0], fields[1])
	}
	return []byte(b.String())
}

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
