// Package node runs one real Kubernetes node on this machine for the end-to-end tier:
// containerd (Debian's, with runc and the CNI plugins), a kubelet, kube-scheduler and
// kube-controller-manager built from the module proxy, and a KVM device plugin, all under a
// state directory of their own, against an API server the caller runs.
//
// Everything it starts it also stops, and [Node.Stop] (also run by [Start] first, for a run
// that was killed hard) removes what the node left on the machine: container processes,
// shims, mounts, cgroups and the Pod bridge. It never touches a containerd or kubelet that
// someone else started: every socket, directory and cgroup it uses is its own.
package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/exporterset/exporterset/internal/testing/testproc"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultStateDir is the state directory of the tier: a fixed, short path (unix socket paths
// are limited to 108 bytes), so a run killed hard is cleaned up by the next.
const DefaultStateDir = "/tmp/exporterset-e2e"

// Options say where the node lives and what it runs against.
type Options struct {
	// StateDir holds everything the node writes except logs; it is removed by Stop.
	StateDir string
	// LogDir receives one log file per daemon; it is kept.
	LogDir string
	// Bins holds kubelet, kube-scheduler and kube-controller-manager.
	Bins string
	// Kubeconfig is a cluster-admin kubeconfig of the API server.
	Kubeconfig string
	// RootCAFile is the API server's serving CA, published to Pods as kube-root-ca.crt.
	RootCAFile string
	// ServiceAccountKeyFile is the API server's service account signing key.
	ServiceAccountKeyFile string
	// Images are image tarballs imported into containerd before the kubelet starts.
	Images []string
	// DevicePlugin is the KVM device plugin binary ("" runs none).
	DevicePlugin string
	// DevicePluginArgs are passed to it after its socket directory.
	DevicePluginArgs []string
}

// Node is a running node.
type Node struct {
	opts  Options
	state string

	mu        sync.Mutex
	daemons   map[string]*daemon
	stopOnce  sync.Once
	stopError error
}

// Start tears down what an earlier run under the same state directory left, then starts
// containerd, imports the images, and starts kube-controller-manager, kube-scheduler, the
// kubelet and the device plugin. It returns once the node is registered and Ready.
func Start(ctx context.Context, c client.Client, opts Options) (*Node, error) {
	state, err := filepath.Abs(opts.StateDir)
	if err != nil {
		return nil, err
	}
	if err := Teardown(state); err != nil {
		return nil, fmt.Errorf("clearing an earlier run under %s: %w", state, err)
	}
	for _, d := range []string{state, opts.LogDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	n := &Node{opts: opts, state: state, daemons: map[string]*daemon{}}
	if err := n.start(ctx, c); err != nil {
		return nil, errors.Join(err, n.Stop())
	}
	return n, nil
}

func (n *Node) start(ctx context.Context, c client.Client) error {
	o := n.opts
	// The daemons read their kubeconfig from under state, so that their command lines name
	// state and Teardown finds them even after a run that died.
	kc, err := os.ReadFile(o.Kubeconfig)
	if err != nil {
		return err
	}
	o.Kubeconfig = filepath.Join(n.state, "kubeconfig")
	if err := os.WriteFile(o.Kubeconfig, kc, 0o600); err != nil {
		return err
	}
	d, err := startContainerd(n.state, o.LogDir)
	if err != nil {
		return err
	}
	n.add(d)
	if err := importImages(n.state, o.Images); err != nil {
		return err
	}
	if d, err = startControllerManager(o.Bins, o.LogDir, o.Kubeconfig, o.RootCAFile, o.ServiceAccountKeyFile); err != nil {
		return err
	}
	n.add(d)
	if d, err = startScheduler(o.Bins, o.LogDir, o.Kubeconfig); err != nil {
		return err
	}
	n.add(d)
	port, err := testproc.FreePort()
	if err != nil {
		return err
	}
	if d, err = startKubelet(o.Bins, n.state, o.LogDir, o.Kubeconfig, port); err != nil {
		return err
	}
	n.add(d)
	if o.DevicePlugin != "" {
		if err := n.StartDevicePlugin(); err != nil {
			return err
		}
	}
	return n.waitReady(ctx, c)
}

// waitReady waits for the kubelet's Node to be Ready, failing early when a daemon died.
func (n *Node) waitReady(ctx context.Context, c client.Client) error {
	return waitFor(3*time.Minute, 500*time.Millisecond, "node "+Name+" to be Ready", func() (bool, string) {
		if err := n.anyDead(); err != nil {
			return false, err.Error()
		}
		var node corev1.Node
		if err := c.Get(ctx, client.ObjectKey{Name: Name}, &node); err != nil {
			return false, err.Error()
		}
		for _, cond := range node.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status == corev1.ConditionTrue, cond.Reason + ": " + cond.Message
			}
		}
		return false, "no Ready condition yet"
	})
}

func (n *Node) add(d *daemon) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.daemons[d.name] = d
}

// anyDead names the first daemon that has exited.
func (n *Node) anyDead() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, d := range n.daemons {
		if err := d.alive(); err != nil {
			return err
		}
	}
	return nil
}

// StartDevicePlugin starts the KVM device plugin, which registers with the kubelet.
func (n *Node) StartDevicePlugin() error {
	args := append([]string{"--socket-dir", DevicePluginDir}, n.opts.DevicePluginArgs...)
	d, err := startDaemon(n.opts.LogDir, "kvm-device-plugin", n.opts.DevicePlugin, args, nil)
	if err != nil {
		return err
	}
	n.add(d)
	return nil
}

// StopDevicePlugin stops the device plugin: the kubelet then drops the device from the
// node's allocatable resources.
func (n *Node) StopDevicePlugin() {
	n.mu.Lock()
	d := n.daemons["kvm-device-plugin"]
	delete(n.daemons, "kvm-device-plugin")
	n.mu.Unlock()
	d.stop(10 * time.Second)
}

// LogDir is where the daemons' logs are.
func (n *Node) LogDir() string { return n.opts.LogDir }

// PodLogsDir is where the kubelet writes the containers' logs (<ns>_<pod>_<uid>/<container>/).
// It lives in the state directory, so it is gone after Stop.
func (n *Node) PodLogsDir() string { return filepath.Join(n.state, "pod-logs") }

// Stop stops every daemon (the device plugin and kubelet first, containerd last) and tears
// the node down. Only the first call does anything.
func (n *Node) Stop() error {
	n.stopOnce.Do(func() {
		for _, name := range []string{"kvm-device-plugin", "kubelet", "kube-scheduler", "kube-controller-manager", "containerd"} {
			n.mu.Lock()
			d := n.daemons[name]
			n.mu.Unlock()
			if d != nil {
				d.stop(15 * time.Second)
			}
			if name == "kubelet" {
				// Containers outlive the kubelet; kill them before containerd goes.
				killCgroupTree()
			}
		}
		n.stopError = Teardown(n.state)
	})
	return n.stopError
}
