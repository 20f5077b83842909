//go:build e2e

package e2e

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/exporterset/exporterset/internal/testing/e2e/node"
	"github.com/exporterset/exporterset/internal/testing/testenv"
	"github.com/exporterset/exporterset/internal/testing/testproc"
)

func goarch() string { return runtime.GOARCH }

// tarballRef reads the image reference a docker archive was written with.
func tarballRef(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err != nil {
			return "", fmt.Errorf("%s has no manifest.json: %w", path, err)
		}
		if h.Name != "manifest.json" {
			continue
		}
		var m []struct{ RepoTags []string }
		if err := json.NewDecoder(tr).Decode(&m); err != nil {
			return "", err
		}
		if len(m) == 0 || len(m[0].RepoTags) == 0 {
			return "", fmt.Errorf("%s names no image", path)
		}
		return m[0].RepoTags[0], nil
	}
}

// controllerNamespace is where config/default installs the controller.
const controllerNamespace = "exporterset-system"

// Ports of the controller on the node's network (see deployController).
const (
	metricsPort = 18080
	healthPort  = 18081
)

var deployOnce sync.Once
var deployErr error

// deployController applies config/default as a user would (kubectl kustomize, then every
// object), with what this node needs changed in memory:
//   - the image: the imported controller image (config/default's `images:` is the one place
//     that names it), with the stand-in exporter and runtime images as the provisioner's
//     defaults, so no Pod ever names a registry;
//   - the network: this node runs no kube-proxy, so a Pod cannot reach the API server's
//     Service address. The controller's Pod uses the host network and reaches the API server
//     on 127.0.0.1 (KUBERNETES_SERVICE_HOST/PORT, which in-cluster config reads); its
//     namespace allows that (Pod Security "privileged" instead of "restricted"). Everything
//     else (the ServiceAccount and its projected token, the least-privilege RBAC, the
//     probes, leader election, the non-root user) is config/default's own;
//   - the CPU request: the node has 2 CPUs and upstream's sample class asks for both, so the
//     controller requests none;
//   - ports 18080/18081 instead of 8080/8081, which are the host's on this network.
func deployController(t *testing.T) {
	t.Helper()
	deployOnce.Do(func() { deployErr = applyDefault() })
	if deployErr != nil {
		t.Fatal(deployErr)
	}
	waitControllerRunning(t)
	checkControllerNeverRestarted(t)
}

// checkControllerNeverRestarted fails when a container of the controller's Pods restarted: a
// crash (a panic, a lock taken for lost) stalls every pool for a restart, and the scenario
// that caused it may have passed regardless. Each scenario checks what the ones before it
// left, so a crash is reported by the next scenario at the latest.
func checkControllerNeverRestarted(t *testing.T) {
	t.Helper()
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(controllerNamespace)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			if cs.RestartCount == 0 {
				continue
			}
			last := ""
			if term := cs.LastTerminationState.Terminated; term != nil {
				last = fmt.Sprintf("; last exit %d (%s) at %s: %s", term.ExitCode, term.Reason, term.FinishedAt.Format("15:04:05"), term.Message)
			}
			t.Errorf("the controller's container %s/%s restarted %d times%s; its log:%s", p.Name, cs.Name, cs.RestartCount, last, controllerLogAbout("lost", 20))
		}
	}
}

func applyDefault() error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	out, err := exec.Command(kubectl, "kustomize", filepath.Join(root, "config", "default")).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("kubectl kustomize: %v: %s", err, ee.Stderr)
		}
		return err
	}
	u, err := url.Parse(env.Config.Host)
	if err != nil {
		return err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	for {
		obj := &unstructured.Unstructured{}
		if err := dec.Decode(&obj.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := adaptForNode(obj, u.Port()); err != nil {
			return err
		}
		obj.SetManagedFields(nil)
		if err := env.Client.Patch(ctx, obj, client.Apply, client.FieldOwner("e2e"), client.ForceOwnership); err != nil {
			return fmt.Errorf("applying %s %s: %w", obj.GetKind(), obj.GetName(), err)
		}
	}
}

// adaptForNode makes the changes deployController lists.
func adaptForNode(obj *unstructured.Unstructured, apiPort string) error {
	switch obj.GetKind() {
	case "Namespace":
		labels := obj.GetLabels()
		labels["pod-security.kubernetes.io/enforce"] = "privileged"
		obj.SetLabels(labels)
	case "Deployment":
		var d appsv1.Deployment
		if err := runtimeFromUnstructured(obj, &d); err != nil {
			return err
		}
		spec := &d.Spec.Template.Spec
		spec.HostNetwork = true
		c := &spec.Containers[0]
		c.Image = controllerImage
		c.ImagePullPolicy = corev1.PullNever
		c.Args = append(c.Args[:0:0], "--leader-elect",
			fmt.Sprintf("--metrics-bind-address=:%d", metricsPort),
			fmt.Sprintf("--health-probe-bind-address=:%d", healthPort),
			"--exporter-image=e2e.local/jumpstarter:e2e",
			"--runtime-image=e2e.local/qemu-runtime:e2e")
		for i := range c.Ports {
			switch c.Ports[i].Name {
			case "metrics":
				c.Ports[i].ContainerPort = metricsPort
			case "health":
				c.Ports[i].ContainerPort = healthPort
			}
		}
		c.Env = append(c.Env,
			corev1.EnvVar{Name: "KUBERNETES_SERVICE_HOST", Value: "127.0.0.1"},
			corev1.EnvVar{Name: "KUBERNETES_SERVICE_PORT", Value: apiPort})
		delete(c.Resources.Requests, corev1.ResourceCPU)
		return runtimeToUnstructured(&d, obj)
	}
	return nil
}

// waitControllerRunning waits for the controller's Pod: Running and Ready on the real node,
// placed there by the real scheduler.
func waitControllerRunning(t *testing.T) {
	t.Helper()
	testproc.WaitFor(t, 3*time.Minute, "the controller's Pod to be Ready on "+node.Name, func() (bool, string) {
		var pods corev1.PodList
		if err := env.Client.List(ctx, &pods, client.InNamespace(controllerNamespace)); err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && podReady(&p) && p.Spec.NodeName == node.Name && scheduledByScheduler(&p) {
				return true, ""
			}
		}
		return false, describePods(pods.Items)
	})
}
