package node

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// SandboxImage is the pause image every Pod sandbox runs. It is imported before the kubelet
// starts, so containerd never pulls it.
const SandboxImage = "e2e.local/pause:e2e"

// containerdConfig is containerd's configuration for the tier: every path under the state
// directory (so it never meets a containerd someone else runs), the CRI plugin on runc with
// cgroupfs, the CNI bridge of cniConfig, and two settings this machine needs:
//   - restrict_oom_score_adj: root here lacks CAP_SYS_RESOURCE, so runc cannot lower a
//     process's OOM score, and the kubelet asks for -998 for every sandbox; without it every
//     sandbox fails with "can't get final child's PID from pipe: EOF" (runc --debug says
//     "nsexec: failed to update /proc/self/oom_score_adj: Permission denied").
//   - device_ownership_from_security_context: a device handed out by a device plugin (the
//     KVM stand-in) is owned by the container's runAsUser/runAsGroup, as KubeVirt nodes are
//     configured, so the non-root exporter and runtime can open it.
func containerdConfig(state string) string {
	p := func(s string) string { return filepath.Join(state, s) }
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = %[3]q
[ttrpc]
  address = %[4]q
[debug]
  address = %[5]q
  level = "info"
[plugins."io.containerd.internal.v1.opt"]
  path = %[6]q
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = %[7]q
  restrict_oom_score_adj = true
  device_ownership_from_security_context = true
  netns_mounts_under_state_dir = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[8]q
    conf_dir = %[9]q
`, p("containerd/root"), p("containerd/state"), p("containerd/containerd.sock"), p("containerd/containerd.sock.ttrpc"),
		p("containerd/debug.sock"), p("containerd/opt"), SandboxImage, cniBinDir, p("cni/net.d"))
}

// containerdSocket is the CRI and containerd API socket under state.
func containerdSocket(state string) string {
	return filepath.Join(state, "containerd/containerd.sock")
}

// startContainerd writes the config and starts containerd, waiting until it answers.
func startContainerd(state, logDir string) (*daemon, error) {
	cfg := filepath.Join(state, "containerd.toml")
	if err := os.MkdirAll(filepath.Join(state, "containerd"), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(cfg, []byte(containerdConfig(state)), 0o644); err != nil {
		return nil, err
	}
	if err := writeCNIConfig(state); err != nil {
		return nil, err
	}
	d, err := startDaemon(logDir, "containerd", "containerd", []string{"--config", cfg}, nil)
	if err != nil {
		return nil, err
	}
	sock := containerdSocket(state)
	err = waitFor(30*time.Second, 100*time.Millisecond, "containerd to answer", func() (bool, string) {
		if err := d.alive(); err != nil {
			return false, err.Error()
		}
		out, err := ctr(sock, "version")
		return err == nil, out
	})
	if err != nil {
		d.stop(5 * time.Second)
		return nil, err
	}
	return d, nil
}

// ctr runs containerd's CLI against sock in the CRI's namespace.
func ctr(sock string, args ...string) (string, error) {
	out, err := exec.Command("ctr", append([]string{"--address", sock, "--namespace", "k8s.io"}, args...)...).CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// importImages imports docker-archive or OCI tarballs into the CRI's image store, where the
// kubelet finds them without pulling.
func importImages(state string, tarballs []string) error {
	for _, tb := range tarballs {
		if out, err := ctr(containerdSocket(state), "images", "import", tb); err != nil {
			return fmt.Errorf("importing %s: %w: %s", tb, err, out)
		}
	}
	return nil
}

// ImportImages imports tarballs into the running node's containerd.
func (n *Node) ImportImages(tarballs ...string) error { return importImages(n.state, tarballs) }
