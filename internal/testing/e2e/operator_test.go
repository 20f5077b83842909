//go:build e2e

package e2e

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/e2e/node"
	"github.com/exporterset/exporterset/internal/testing/testenv"
	"github.com/exporterset/exporterset/internal/testing/testproc"
	"github.com/exporterset/exporterset/internal/testing/upstreamop"
)

// operatorDeployment is the Deployment upstream's operator makes for one provisioner (same
// file and commit): one replica, RollingUpdate 25%/25%, 30 s grace, container "manager"
// running /exporter-set-controller with the operator's args and NAMESPACE, probes on 8081,
// capabilities dropped, no privilege escalation; with our image. What this node needs on
// top is what config/default gets too (deployController): the host network and the API
// server's loopback address, as no kube-proxy runs here.
func operatorDeployment(ns, apiPort, provisioner string) *appsv1.Deployment {
	labels := map[string]string{"app": "exporterset-" + "qemu"}
	quarter := intstr.FromString("25%")
	probe := func(path string) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromInt32(upstreamop.ProbePort)}}}
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "jumpstarter-exporterset-qemu", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &quarter, MaxUnavailable: &quarter}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName:            "jumpstarter-exporterset-qemu",
					TerminationGracePeriodSeconds: ptr.To[int64](30),
					HostNetwork:                   true,
					Containers: []corev1.Container{{
						Name:            "manager",
						Image:           controllerImage,
						ImagePullPolicy: corev1.PullNever,
						Command:         []string{upstreamop.Command},
						Args:            upstreamop.Args(provisioner),
						Env: []corev1.EnvVar{
							{Name: upstreamop.NamespaceEnv, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
							{Name: "KUBERNETES_SERVICE_HOST", Value: "127.0.0.1"},
							{Name: "KUBERNETES_SERVICE_PORT", Value: apiPort},
						},
						LivenessProbe:  probe("/healthz"),
						ReadinessProbe: probe("/readyz"),
						Resources:      corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}},
						SecurityContext: &corev1.SecurityContext{
							AllowPrivilegeEscalation: ptr.To(false),
							Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
}

// Our image under a Deployment shaped like upstream's operator's, bound only to its Role:
// it runs as /exporter-set-controller in the real node's container, honours NAMESPACE, holds
// upstream's lock exporter-set-controller-<provisioner>, answers the probes, and serves
// upstream's sample pool in its namespace.
func TestOperatorDeploymentOnRealNode(t *testing.T) {
	deployController(t)
	// config/default's controller watches every namespace: two controllers on one pool is
	// what a user must never run, so it stops while the operator's runs.
	scaleDefault(t, 0)
	t.Cleanup(func() { scaleDefault(t, 1) })

	ns := newNamespace(t, "jumpstarter")
	startCore(t, ns)
	privileged(t, ns)
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "jumpstarter-exporterset-qemu", Namespace: ns}}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "jumpstarter-exporterset-qemu", Namespace: ns}, Rules: upstreamop.Rules}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "jumpstarter-exporterset-qemu", Namespace: ns},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}}}
	u, err := url.Parse(env.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	dep := operatorDeployment(ns, u.Port(), "qemu.jumpstarter.dev")
	for _, o := range []client.Object{sa, role, binding, dep} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	applySamplesWithImages(t, ns)

	testproc.WaitFor(t, 3*time.Minute, "the operator's controller to serve the sample pool", func() (bool, string) {
		s := getSet(t, ns, samplePool)
		a := condition(s, string(vtv1alpha1.ConditionAvailable))
		return a.Status == metav1.ConditionTrue, fmt.Sprintf("Available=%s %s: %s; pods:%s", a.Status, a.Reason, a.Message, describePods(podsOf(t, ns)))
	})
	// Its readiness probe runs every 10 s: the pool can be served before the first one.
	var ctrlPod *corev1.Pod
	testproc.WaitFor(t, time.Minute, "the operator's controller Pod Running and Ready on "+node.Name, func() (bool, string) {
		for _, p := range podsOf(t, ns) {
			if p.Labels["app"] == "exporterset-qemu" && p.Status.Phase == corev1.PodRunning && podReady(&p) &&
				p.Spec.NodeName == node.Name && scheduledByScheduler(&p) {
				ctrlPod = &p
				return true, ""
			}
		}
		return false, describePods(podsOf(t, ns))
	})
	var lock coordinationv1.Lease
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: upstreamop.LockName("qemu.jumpstarter.dev")}, &lock); err != nil {
		t.Fatalf("upstream's election Lease: %v", err)
	}
	// The holder is <hostname>_<uid>; on the host network the hostname is the node's.
	if lock.Spec.HolderIdentity == nil || *lock.Spec.HolderIdentity == "" || lock.Spec.RenewTime == nil ||
		time.Since(lock.Spec.RenewTime.Time) > time.Minute {
		t.Errorf("election Lease %s not held and renewed: %+v", lock.Name, lock.Spec)
	} else {
		t.Logf("Pod %s runs the controller; %s held by %s", ctrlPod.Name, lock.Name, *lock.Spec.HolderIdentity)
	}
}

// applySamplesWithImages creates config/samples in ns with the stand-in images on the
// ExporterSet: the operator's args are upstream's, so the provisioner's defaults are
// upstream's registry images, which this node must never pull.
func applySamplesWithImages(t *testing.T, ns string) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(root, "config", "samples", "*.yaml"))
	for _, f := range files {
		if filepath.Base(f) == "kustomization.yaml" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := utilyaml.Unmarshal(b, &u.Object); err != nil {
			t.Fatal(err)
		}
		u.SetNamespace(ns)
		if u.GetKind() == "ExporterSet" {
			images := map[string]any{
				"exporter": map[string]any{"image": "e2e.local/jumpstarter:e2e"},
				"runtime":  map[string]any{"image": "e2e.local/qemu-runtime:e2e"},
			}
			if err := unstructured.SetNestedMap(u.Object, images, "spec", "images"); err != nil {
				t.Fatal(err)
			}
		}
		if err := env.Client.Create(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
}

// scaleDefault sets config/default's controller Deployment to n replicas and waits for it.
func scaleDefault(t *testing.T, n int32) {
	t.Helper()
	var d appsv1.Deployment
	key := client.ObjectKey{Namespace: controllerNamespace, Name: "exporterset-controller"}
	if err := env.Client.Get(ctx, key, &d); err != nil {
		t.Fatal(err)
	}
	before := d.DeepCopy()
	d.Spec.Replicas = ptr.To(n)
	if err := env.Client.Patch(ctx, &d, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	testproc.WaitFor(t, 2*time.Minute, fmt.Sprintf("config/default's controller at %d replicas", n), func() (bool, string) {
		var pods corev1.PodList
		if err := env.Client.List(ctx, &pods, client.InNamespace(controllerNamespace)); err != nil {
			return false, err.Error()
		}
		ready := int32(0)
		for _, p := range pods.Items {
			if n == 0 || (p.Status.Phase == corev1.PodRunning && podReady(&p)) {
				ready++
			}
		}
		return ready == n, describePods(pods.Items)
	})
}

// privileged lets ns run host-network Pods (see deployController).
func privileged(t *testing.T, ns string) {
	t.Helper()
	var n corev1.Namespace
	if err := env.Client.Get(ctx, client.ObjectKey{Name: ns}, &n); err != nil {
		t.Fatal(err)
	}
	before := n.DeepCopy()
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels["pod-security.kubernetes.io/enforce"] = "privileged"
	if err := env.Client.Patch(ctx, &n, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}
