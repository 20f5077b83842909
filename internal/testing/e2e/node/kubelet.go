package node

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// Name is the node the kubelet registers. The API server reaches a kubelet by the node's
// Hostname address first, and "localhost" resolves to loopback on any machine, so exec and
// logs never leave 127.0.0.1.
const Name = "localhost"

// CgroupRoot is the cgroup (in every v1 hierarchy) under which the kubelet puts its
// kubepods tree: cleanup kills what is left there and removes it.
const CgroupRoot = "/exporterset-e2e"

// kubeletConfig is the KubeletConfiguration of the tier's node:
//   - failCgroupV1: false and cgroupDriver cgroupfs: these machines have cgroup v1 (hybrid)
//     and no systemd;
//   - failSwapOn: false, whatever the machine's swap;
//   - anonymous authentication with AlwaysAllow, served on 127.0.0.1 only: the API server's
//     exec and logs requests are the only clients;
//   - eviction and image garbage collection thresholds out of reach, so a busy disk never
//     evicts a Pod under test or deletes an imported image (nothing could pull it back).
func kubeletConfig(state string, port int) string {
	p := func(s string) string { return filepath.Join(state, s) }
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: %d
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous: {enabled: true}
  webhook: {enabled: false}
authorization:
  mode: AlwaysAllow
cgroupDriver: cgroupfs
cgroupRoot: %s
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: unix://%s
podLogsDir: %s
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: "100Mi"
  nodefs.available: "1%%"
  nodefs.inodesFree: "1%%"
  imagefs.available: "1%%"
nodeStatusUpdateFrequency: 5s
`, port, CgroupRoot, containerdSocket(state), p("pod-logs"))
}

// cgroupHierarchies are the v1 controllers the kubelet needs CgroupRoot in.
var cgroupHierarchies = []string{"cpu", "cpuacct", "cpuset", "memory", "devices", "freezer", "blkio", "pids", "systemd", "hugetlb"}

// makeCgroupRoot creates CgroupRoot in every mounted v1 hierarchy; cpuset needs its cpus and
// mems copied from the parent before anything can join it.
func makeCgroupRoot() error {
	for _, h := range cgroupHierarchies {
		base := filepath.Join("/sys/fs/cgroup", h)
		if _, err := os.Stat(base); err != nil {
			continue
		}
		dir := filepath.Join(base, CgroupRoot)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("creating cgroup %s: %w", dir, err)
		}
		if h == "cpuset" {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				b, err := os.ReadFile(filepath.Join(base, f))
				if err != nil {
					return err
				}
				if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
					return fmt.Errorf("writing %s: %w", filepath.Join(dir, f), err)
				}
			}
		}
	}
	return nil
}

// startKubelet writes the kubelet's config and starts it against kubeconfig.
func startKubelet(bins, state, logDir, kubeconfig string, port int) (*daemon, error) {
	dir := filepath.Join(state, "kubelet")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(state, "pod-logs"), 0o755); err != nil {
		return nil, err
	}
	if err := makeCgroupRoot(); err != nil {
		return nil, err
	}
	cfg := filepath.Join(state, "kubelet.yaml")
	if err := os.WriteFile(cfg, []byte(kubeletConfig(state, port)), 0o644); err != nil {
		return nil, err
	}
	args := []string{
		"--config", cfg,
		"--kubeconfig", kubeconfig,
		"--root-dir", dir,
		"--cert-dir", filepath.Join(dir, "pki"),
		"--hostname-override", Name,
		"--v", strconv.Itoa(2),
	}
	return startDaemon(logDir, "kubelet", filepath.Join(bins, "kubelet"), args, nil)
}

// DevicePluginDir is where the kubelet listens for device plugins. The kubelet fixes this
// path whatever its --root-dir, so the tier uses it and removes the sockets it left there.
const DevicePluginDir = "/var/lib/kubelet/device-plugins"

// removeDevicePluginSockets removes the kubelet's and the KVM plugin's sockets from
// DevicePluginDir, then the directory and its parent if nothing else is in them.
func removeDevicePluginSockets() {
	for _, s := range []string{"kubelet.sock", "kvm-e2e.sock"} {
		_ = os.Remove(filepath.Join(DevicePluginDir, s))
	}
	_ = os.Remove(DevicePluginDir)
	_ = os.Remove(filepath.Dir(DevicePluginDir))
}
