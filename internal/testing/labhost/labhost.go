// Package labhost runs real lab hosts for tests: each host is Debian's sshd in a network
// namespace of its own, on an address of its own, with its own host key, and a directory of
// its own bind-mounted (in the host's mount namespace only) at the lab's HostRoot, so that the
// hosts share this machine's file system yet each sees only its own instances there.
//
// A host reaches nothing beyond its own link but what RouteTo or ServiceAddress route it to
// (a service of the root namespace its processes dial, such as a Jumpstarter core).
//
// It needs root (ip netns, mounts), iproute2's ip and ss, Debian's openssh-server
// (/usr/sbin/sshd), openssh-client's ssh-keygen and util-linux's setsid; tests that run QEMU
// also need qemu-system-x86 (RequireQEMU). Require skips the test cleanly, naming what is
// missing, when the machine cannot run the lab, and under -short.
//
// It is test support only: nothing outside _test.go files and other test machinery may import
// it (hack/check-prod-deps.sh keeps it out of the controller binary).
package labhost

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/exporterset/exporterset/internal/testing/testproc"
)

// Host is one running lab host.
type Host struct {
	// Name is lab1, lab2, ... in the order Start made them.
	Name string
	// Address and Port are where its sshd listens (10.231.X.2:22).
	Address string
	Port    int
	// NS is its network namespace; Veth the host side of its link, inside NS: setting it
	// down cuts the host off (Cut).
	NS, Veth string
	// Gateway is the root namespace's side of its link (10.231.X.1): the next hop of the
	// routes RouteTo adds.
	Gateway string
	// RootDir is what the host sees at Lab.HostRoot, as this process sees it.
	RootDir string
	// HostKey is the public line of the host's key, for known_hosts.
	HostKey []byte
}

// Lab is a set of running hosts and the keys to reach them.
type Lab struct {
	Hosts []Host
	// ClientKey is the private key (OpenSSH format) every host authorizes for root;
	// StrangerKey one no host authorizes.
	ClientKey, StrangerKey []byte
	// WrongHostLine is the public line of a host key no lab host has.
	WrongHostLine string
	// Dir is the lab's scratch directory (removed at the end of the test).
	Dir string
	// HostRoot is the directory each host sees as its own: the root to give a provisioner.
	HostRoot string

	// routed are the root namespace's addresses every host has a route to (RouteTo): a
	// link set down loses its routes, so Restore adds them again.
	routed []string
}

// LinkPattern matches, as an iptables interface name (-i), the root namespace's side of
// every lab host's link: a firewall rule that accepts it admits the lab hosts only.
const LinkPattern = "bm+"

// Require skips t unless the machine can run a lab: root, ip, sshd, ssh-keygen, setsid, and
// not -short.
func Require(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("lab test needs real sshd hosts in network namespaces; skipped with -short")
	}
	if os.Geteuid() != 0 {
		t.Skip("lab test needs root (ip netns, sshd); run as root")
	}
	if _, err := os.Stat("/usr/sbin/sshd"); err != nil {
		t.Skipf("lab test needs /usr/sbin/sshd (Debian package openssh-server): %v", err)
	}
	for _, bin := range []string{"ip", "ssh-keygen", "setsid"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("lab test needs %s (Debian packages iproute2, openssh-client, util-linux): %v", bin, err)
		}
	}
}

// RequireQEMU skips t unless qemu-system-x86_64 is installed, and returns its path.
func RequireQEMU(t testing.TB) string {
	t.Helper()
	qemu, err := exec.LookPath("qemu-system-x86_64")
	if err != nil {
		t.Skip("lab test needs qemu-system-x86_64 (Debian package qemu-system-x86): ", err)
	}
	return qemu
}

// Run runs a setup command and fails the test with its output.
func Run(t testing.TB, name string, args ...string) {
	t.Helper()
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
}

// Keygen makes an ed25519 key pair in dir and returns the private key and the public line.
func Keygen(t testing.TB, dir, name string) (priv, pub []byte) {
	t.Helper()
	p := filepath.Join(dir, name)
	Run(t, "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", p)
	priv, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	pub, err = os.ReadFile(p + ".pub")
	if err != nil {
		t.Fatal(err)
	}
	return priv, bytes.TrimSpace(pub)
}

// started counts the hosts this process started, so that two labs of one test (or of tests
// in a row) get distinct names and subnets.
var started atomic.Int32

// Start starts n lab hosts (call Require first) and registers their teardown with t. It
// takes about a second; slots and the rest of a provisioner's view of a host are the
// caller's.
func Start(t testing.TB, n int) *Lab {
	t.Helper()
	dir := t.TempDir()
	l := &Lab{Dir: dir, HostRoot: filepath.Join(dir, "hostroot")}
	if err := os.Mkdir(l.HostRoot, 0o755); err != nil {
		t.Fatal(err)
	}
	var clientPub []byte
	l.ClientKey, clientPub = Keygen(t, dir, "client")
	l.StrangerKey, _ = Keygen(t, dir, "stranger")
	_, wrong := Keygen(t, dir, "wronghost")
	l.WrongHostLine = string(wrong)
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, append(clientPub, '\n'), 0o600); err != nil {
		t.Fatal(err)
	}
	// sshd insists on its privilege separation directory.
	if err := os.MkdirAll("/run/sshd", 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		l.Hosts = append(l.Hosts, l.startHost(t, authorized, i))
	}
	return l
}

// freeSubnet returns a third octet for 10.231.X.0/30 that no interface of the root namespace
// uses, starting from one derived from the pid and seq, so that concurrent test processes
// (go test runs packages in parallel) rarely try the same one.
func freeSubnet(t testing.TB, seq int) int {
	t.Helper()
	out, err := exec.Command("ip", "-o", "-4", "addr", "show").Output()
	if err != nil {
		t.Fatalf("ip addr show: %v", err)
	}
	start := os.Getpid()%60*4 + seq
	for k := range 250 {
		sub := (start + k) % 250
		if !bytes.Contains(out, []byte(fmt.Sprintf(" 10.231.%d.1/", sub))) {
			return sub
		}
	}
	t.Fatal("no free 10.231.X.0/30 subnet")
	return 0
}

// startHost starts host i: netns, veth pair 10.231.X.1/30 (root side) and .2/30 (host side),
// sshd listening on .2:22, with its own directory mounted at l.HostRoot.
func (l *Lab) startHost(t testing.TB, authorized string, i int) Host {
	t.Helper()
	seq := int(started.Add(1))
	tag := fmt.Sprintf("bm%d%d", os.Getpid()%100000, seq)
	ns, vethRoot, vethNS := tag+"ns", tag+"r", tag+"n"
	Run(t, "ip", "netns", "add", ns)
	t.Cleanup(func() {
		// sshd's per-connection processes outlive its listener, and one whose client went
		// silent (the host cut when the test ended) waits forever, keeping the netns alive.
		if out, err := exec.Command("ip", "netns", "pids", ns).Output(); err == nil {
			for _, f := range strings.Fields(string(out)) {
				if pid, err := strconv.Atoi(f); err == nil && pid > 1 {
					_ = syscall.Kill(pid, syscall.SIGKILL)
				}
			}
		}
		_ = exec.Command("ip", "netns", "del", ns).Run()
	})
	Run(t, "ip", "link", "add", vethRoot, "type", "veth", "peer", "name", vethNS)
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", vethRoot).Run() })
	Run(t, "ip", "link", "set", vethNS, "netns", ns)
	sub := freeSubnet(t, seq)
	rootAddr, nsAddr := fmt.Sprintf("10.231.%d.1", sub), fmt.Sprintf("10.231.%d.2", sub)
	Run(t, "ip", "addr", "add", rootAddr+"/30", "dev", vethRoot)
	Run(t, "ip", "link", "set", vethRoot, "up")
	Run(t, "ip", "netns", "exec", ns, "ip", "addr", "add", nsAddr+"/30", "dev", vethNS)
	Run(t, "ip", "netns", "exec", ns, "ip", "link", "set", vethNS, "up")
	Run(t, "ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")

	hdir := filepath.Join(l.Dir, fmt.Sprintf("host%d", i))
	if err := os.Mkdir(hdir, 0o700); err != nil {
		t.Fatal(err)
	}
	rootDir := filepath.Join(hdir, "root")
	if err := os.Mkdir(rootDir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, hostPub := Keygen(t, hdir, "ssh_host_ed25519_key")
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
	var logs testproc.Buffer
	// `ip netns exec` runs sshd in a mount namespace of its own whose mounts do not propagate
	// back, so the bind mounts are seen by this host's sessions (and what they start) only.
	// The second hides root's ~/.bashrc, which bash runs for every command sshd starts: this
	// machine's (pyenv init, a rehash under a lock file) cost each command 1.5 s, and a session
	// killed during it left the lock behind, which made every later command wait 60 s for it.
	// The machine's shell start-up is not what the lab tests.
	cmd := exec.Command("ip", "netns", "exec", ns, "sh", "-c", `mount --bind "$1" "$2" &&
		home=$(getent passwd root | cut -d: -f6) &&
		{ [ ! -f "$home/.bashrc" ] || mount --bind /dev/null "$home/.bashrc"; } &&
		exec /usr/sbin/sshd -D -e -f "$3"`,
		"sh", rootDir, l.HostRoot, cfg)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	name := fmt.Sprintf("lab%d", i+1)
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			t.Logf("sshd of %s:\n%s", name, logs.String())
		}
	})
	h := Host{Name: name, Address: nsAddr, Port: 22, NS: ns, Veth: vethNS, Gateway: rootAddr, RootDir: rootDir, HostKey: hostPub}
	if err := waitTCP(h, 10*time.Second, done); err != nil {
		t.Fatalf("sshd of %s: %v\n%s", name, err, logs.String())
	}
	return h
}

// waitTCP waits until h accepts TCP (sshd -D listens before it forks anything), failing
// early when done (the sshd exited) is closed.
func waitTCP(h Host, timeout time.Duration, done <-chan struct{}) error {
	addr := net.JoinHostPort(h.Address, strconv.Itoa(h.Port))
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, 500*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("exited")
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not listening on %s after %v: %w", addr, timeout, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// KnownHosts returns a known_hosts document trusting every host's real key.
func (l *Lab) KnownHosts() []byte {
	return l.knownHosts(-1)
}

// KnownHostsWrongFor returns a known_hosts document trusting every host's real key but host
// i's, for which it lists WrongHostLine's key: dialling host i is a host key mismatch.
func (l *Lab) KnownHostsWrongFor(i int) []byte {
	return l.knownHosts(i)
}

// knownHosts lists each host's key, WrongHostLine's for host wrong.
func (l *Lab) knownHosts(wrong int) []byte {
	var b strings.Builder
	for i, h := range l.Hosts {
		key := h.HostKey
		if i == wrong {
			key = []byte(l.WrongHostLine)
		}
		fields := strings.Fields(string(key))
		addr := h.Address
		if h.Port != 22 {
			addr = fmt.Sprintf("[%s]:%d", h.Address, h.Port)
		}
		fmt.Fprintf(&b, "%s %s %s\n", addr, fields[0], fields[1])
	}
	return []byte(b.String())
}

// Cut makes host i unreachable, as a host powered off or unplugged: its side of the link goes
// down, so its address no longer resolves (a dial fails with "no route to host" once ARP
// gives up, after a few seconds) and a kept connection stops answering (no reset is sent).
func (l *Lab) Cut(t testing.TB, i int) {
	t.Helper()
	h := l.Hosts[i]
	Run(t, "ip", "netns", "exec", h.NS, "ip", "link", "set", h.Veth, "down")
}

// Restore brings host i's link back up, routes it again to RouteTo's addresses (a link set
// down loses its routes) and waits (15 s at most) until it accepts TCP again: the neighbour
// entry of a host that was cut off must be resolved anew first.
func (l *Lab) Restore(t testing.TB, i int) {
	t.Helper()
	h := l.Hosts[i]
	Run(t, "ip", "netns", "exec", h.NS, "ip", "link", "set", h.Veth, "up")
	for _, addr := range l.routed {
		l.route(t, h, addr)
	}
	if err := waitTCP(h, 15*time.Second, nil); err != nil {
		t.Fatalf("%s does not answer again: %v", h.Name, err)
	}
}

// InstanceDirs returns the instance directories on host i (RootDir/NAMESPACE_SET/INSTANCE,
// the baremetal provisioner's layout), relative to RootDir, sorted.
func (l *Lab) InstanceDirs(i int) []string {
	dirs, _ := filepath.Glob(filepath.Join(l.Hosts[i].RootDir, "*", "*"))
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			rel, _ := filepath.Rel(l.Hosts[i].RootDir, d)
			out = append(out, rel)
		}
	}
	return out
}

// KillInstances kills the process group of every pid file in the hosts' instance
// directories (NAME.pid, as the baremetal provisioner writes them), so that no QEMU or
// exporter outlives a test whatever happened. Register it with t.Cleanup after Start, so
// that it runs before the hosts are torn down.
func (l *Lab) KillInstances() {
	for _, h := range l.Hosts {
		pids, _ := filepath.Glob(filepath.Join(h.RootDir, "*", "*", "*.pid"))
		for _, f := range pids {
			b, err := os.ReadFile(f)
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && perr == nil && pid > 1 {
				_ = syscall.Kill(-pid, syscall.SIGKILL)
			}
		}
	}
}

// ServiceAddress gives the root network namespace an address of its own that every host
// reaches (RouteTo), for a service the hosts' processes dial (a Jumpstarter core's gRPC
// port), and returns it. It sits on a veth pair of its own rather than on a host's link:
// cutting that host (Cut) then takes no other host's way to it. A veth pair rather than a
// dummy interface, which needs a kernel module that containers often lack. Both are removed
// at the end of the test.
func (l *Lab) ServiceAddress(t testing.TB) string {
	t.Helper()
	out, err := exec.Command("ip", "-o", "-4", "addr", "show").Output()
	if err != nil {
		t.Fatalf("ip addr show: %v", err)
	}
	seq := int(started.Add(1))
	addr := ""
	for k := range 250 {
		// 10.232.X.1 is outside every host's 10.231.X.0/30; starting from the pid keeps
		// concurrent test processes apart, the check above from addresses in use.
		if a := fmt.Sprintf("10.232.%d.1", (os.Getpid()+seq+k)%250); !bytes.Contains(out, []byte(" "+a+"/")) {
			addr = a
			break
		}
	}
	if addr == "" {
		t.Fatal("no free 10.232.X.1 address")
	}
	tag := fmt.Sprintf("bm%d%ds", os.Getpid()%100000, seq)
	Run(t, "ip", "link", "add", tag+"a", "type", "veth", "peer", "name", tag+"b")
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", tag+"a").Run() })
	Run(t, "ip", "addr", "add", addr+"/32", "dev", tag+"a")
	Run(t, "ip", "link", "set", tag+"a", "up")
	Run(t, "ip", "link", "set", tag+"b", "up")
	l.RouteTo(t, addr)
	return addr
}

// RouteTo routes every host to addr, an address of the root network namespace, through its
// own link (a host's netns otherwise knows only its /30); Restore routes a host again.
func (l *Lab) RouteTo(t testing.TB, addr string) {
	t.Helper()
	l.routed = append(l.routed, addr)
	for _, h := range l.Hosts {
		l.route(t, h, addr)
	}
}

// route adds (or replaces) h's route to addr via its gateway.
func (l *Lab) route(t testing.TB, h Host, addr string) {
	t.Helper()
	Run(t, "ip", "netns", "exec", h.NS, "ip", "route", "replace", addr+"/32", "via", h.Gateway, "dev", h.Veth)
}

// AbortConnections aborts every TCP connection of the root network namespace to host i's
// sshd (ss -K), as the kernel does by itself once TCP's retransmissions to a host that went
// silent give up (net.ipv4.tcp_retries2, about 15 minutes): for a test that must not wait
// that long for a client whose command was in flight when the host was cut. It returns the
// connections it aborted.
func (l *Lab) AbortConnections(t testing.TB, i int) string {
	t.Helper()
	h := l.Hosts[i]
	out, err := exec.Command("ss", "-K", "-t", "dst", h.Address, "dport", "=", strconv.Itoa(h.Port)).CombinedOutput()
	if err != nil {
		t.Fatalf("ss -K: %v\n%s", err, out)
	}
	return strings.TrimSpace(string(out))
}

// ClassParameters returns the parameters of a qemu-baremetal class over the lab's hosts (host
// i with slots[i], arch x86_64) and HostRoot: QEMU at qemu with `-machine none` under TCG (no
// KVM here), and exporter as the exporter's command (the provisioner appends the config's
// path). It is JSON, as a class's spec.parameters holds it.
func (l *Lab) ClassParameters(t testing.TB, slots []int, qemu string, exporter []string) []byte {
	t.Helper()
	var hosts []map[string]any
	for i, h := range l.Hosts {
		hosts = append(hosts, map[string]any{"name": h.Name, "address": h.Address, "port": h.Port, "arch": "x86_64", "slots": slots[i]})
	}
	params, err := json.Marshal(map[string]any{
		"hosts":    hosts,
		"root":     l.HostRoot,
		"runtime":  map[string]any{"binary": qemu, "kvm": false, "extraArgs": []string{"-machine", "none"}},
		"exporter": map[string]any{"command": exporter},
	})
	if err != nil {
		t.Fatal(err)
	}
	return params
}
