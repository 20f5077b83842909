package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/exporterset/exporterset/internal/testing/testenv"
	"github.com/exporterset/exporterset/internal/testing/testproc"
)

// config/namespaced: Role-only RBAC for one namespace, applied server-side (the CRDs as a
// dry-run: testenv has installed them), the Role's rules those of config/rbac/role.yaml; then
// the binary, run with the Deployment's args and env as the overlay's ServiceAccount
// (impersonated), serves the sample pool in that namespace and logs nothing "forbidden".
func TestKustomizeNamespacedServesAPoolUnderARole(t *testing.T) {
	assets, err := testenv.AssetsDir(false)
	if err != nil {
		t.Fatal(err)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	kubectl := filepath.Join(assets, "kubectl")
	objs := objects(t, run(t, kubectl, "kustomize", filepath.Join(root, "config", "namespaced")))
	clusterRole := objects(t, run(t, kubectl, "kustomize", filepath.Join(root, "config", "rbac")))

	kinds := map[string]int{}
	var ns string
	var deployment *unstructured.Unstructured
	for _, u := range objs {
		kinds[u.GetKind()]++
		switch u.GetKind() {
		case "Namespace":
			ns = u.GetName()
		case "Deployment":
			deployment = u
		}
	}
	if kinds["ClusterRole"] != 0 || kinds["ClusterRoleBinding"] != 0 || kinds["Role"] != 1 || kinds["RoleBinding"] != 1 || ns == "" || deployment == nil {
		t.Fatalf("config/namespaced renders %v: want a Namespace, a Deployment, one Role and RoleBinding, no cluster-wide RBAC", kinds)
	}
	for _, u := range objs {
		if u.GetKind() != "Role" {
			continue
		}
		for _, c := range clusterRole {
			if c.GetKind() == "ClusterRole" && c.GetName() == u.GetName() {
				if d := cmp.Diff(c.Object["rules"], u.Object["rules"]); d != "" {
					t.Errorf("config/namespaced's Role differs from config/rbac's ClusterRole (-cluster +namespaced):\n%s", d)
				}
			}
		}
	}
	if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	for _, u := range objs {
		opts := []client.PatchOption{client.FieldOwner("kustomize-namespaced-test")}
		if u.GetKind() == "CustomResourceDefinition" || u.GetKind() == "Namespace" {
			opts = append(opts, client.DryRunAll, client.ForceOwnership)
		}
		if err := env.Client.Patch(ctx, u, client.Apply, opts...); err != nil {
			t.Errorf("%s %s/%s rejected: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
		}
	}
	if t.Failed() {
		return
	}
	if _, err := testenv.ApplySamples(ctx, env.Client, "", ns); err != nil {
		t.Fatal(err)
	}
	startSim(t, ns)

	// The admin's credentials, impersonating the overlay's ServiceAccount.
	cfg, err := clientcmd.LoadFromFile(kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	sa := "exporterset-controller"
	for _, u := range cfg.AuthInfos {
		u.Impersonate = "system:serviceaccount:" + ns + ":" + sa
		u.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"}
	}
	asSA := filepath.Join(t.TempDir(), "kubeconfig-sa")
	if err := clientcmd.WriteToFile(*cfg, asSA); err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
	var args []string
	procEnv := []string{"HOME=" + t.TempDir()}
	for _, c := range containers {
		c := c.(map[string]any)
		for _, a := range c["args"].([]any) {
			args = append(args, a.(string))
		}
		for _, e := range c["env"].([]any) {
			e := e.(map[string]any)
			if ref, _, _ := unstructured.NestedString(e, "valueFrom", "fieldRef", "fieldPath"); ref == "metadata.namespace" {
				procEnv = append(procEnv, e["name"].(string)+"="+ns) // what the kubelet would set
			}
		}
	}
	if !contains(procEnv, "NAMESPACE="+ns) {
		t.Fatalf("the Deployment does not set NAMESPACE to its namespace: %v", procEnv)
	}
	cmd := exec.Command(binary, localArgs(args, asSA)...)
	cmd.Env = procEnv
	p := testproc.StartCmd(t, cmd)
	defer p.Stop(t, 25*time.Second)
	testproc.WaitFor(t, 60*time.Second, "the sample pool's warm buffer under the overlay's Role", func() (bool, string) {
		st := poolStatus(t, ns)
		return st.AvailableReplicas == 1, fmt.Sprintf("%+v\n%s", st, testproc.Tail(p.Output(), 10))
	})
	time.Sleep(2 * time.Second) // whatever was refused would have been retried and logged by now
	if out := p.Output(); strings.Contains(strings.ToLower(out), "forbidden") {
		t.Errorf("the controller met a permission it lacks:\n%s", testproc.Tail(out, 30))
	}
}
