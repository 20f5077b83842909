package main

import (
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// helmTemplateRelease renders the chart (no CRDs) as release in namespace ns.
func helmTemplateRelease(t *testing.T, helm, root, release, ns string, set ...string) []*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", release, filepath.Join(root, "charts", "exporterset"), "--namespace", ns}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return objects(t, run(t, helm, args...))
}

// Two releases of the chart, applied server-side into one API server, each as its own field
// manager and without forcing: had they shared a name (a ClusterRole, a ClusterRoleBinding,
// a Role in the shared namespace), the second apply would conflict on the fields that differ
// (its subjects, its labels). Both sets of objects then exist side by side.
func TestChartTwoReleasesCoexist(t *testing.T) {
	helm, root := helmBinary(t)
	ns, err := env.CreateNamespace(ctx, "two-releases")
	if err != nil {
		t.Fatal(err)
	}
	other, err := env.CreateNamespace(ctx, "two-releases-b")
	if err != nil {
		t.Fatal(err)
	}
	releases := []struct{ name, ns string }{{"lab-a", ns}, {"lab-b", ns}, {"lab-c", other}}
	seen := map[string]string{} // kind/namespace/name -> release
	var applied []*unstructured.Unstructured
	defer func() {
		for _, u := range applied {
			if err := env.Client.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("cleaning up %s %s: %v", u.GetKind(), u.GetName(), err)
			}
		}
	}()
	clusterScoped := 0
	for _, r := range releases {
		for _, u := range helmTemplateRelease(t, helm, root, r.name, r.ns) {
			key := u.GetKind() + "/" + u.GetNamespace() + "/" + u.GetName()
			if prev, dup := seen[key]; dup {
				t.Errorf("releases %s and %s both render %s", prev, r.name, key)
			}
			seen[key] = r.name
			if u.GetNamespace() == "" {
				clusterScoped++
			}
			if err := env.Client.Patch(ctx, u, client.Apply, client.FieldOwner("release-"+r.name)); err != nil {
				t.Errorf("release %s: %s %s/%s rejected: %v", r.name, u.GetKind(), u.GetNamespace(), u.GetName(), err)
				continue
			}
			applied = append(applied, u)
		}
	}
	if clusterScoped < 2*len(releases) {
		t.Fatalf("%d cluster-scoped objects for %d releases: the default renders a ClusterRole and a ClusterRoleBinding each", clusterScoped, len(releases))
	}
	// Each release's ServiceAccount is bound by its own ClusterRoleBinding.
	for _, r := range releases {
		var sa corev1.ServiceAccount
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: r.ns, Name: r.name + "-exporterset-controller"}, &sa); err != nil {
			t.Errorf("release %s: its ServiceAccount: %v", r.name, err)
		}
		var crb unstructured.Unstructured
		crb.SetAPIVersion("rbac.authorization.k8s.io/v1")
		crb.SetKind("ClusterRoleBinding")
		if err := env.Client.Get(ctx, client.ObjectKey{Name: r.name + "-exporterset-controller"}, &crb); err != nil {
			t.Errorf("release %s: its ClusterRoleBinding: %v", r.name, err)
			continue
		}
		subjects, _, _ := unstructured.NestedSlice(crb.Object, "subjects")
		if len(subjects) != 1 || subjects[0].(map[string]any)["namespace"] != r.ns || subjects[0].(map[string]any)["name"] != sa.Name {
			t.Errorf("release %s: ClusterRoleBinding subjects %v, want its own ServiceAccount", r.name, subjects)
		}
	}
	// nameOverride and fullnameOverride are values of the chart.
	for set, want := range map[string]string{"fullnameOverride=pools": "pools", "nameOverride=pool": "lab-a-pool-controller"} {
		found := false
		for _, u := range helmTemplateRelease(t, helm, root, "lab-a", ns, set) {
			found = found || u.GetKind() == "ClusterRole" && u.GetName() == want
		}
		if !found {
			t.Errorf("--set %s renders no ClusterRole %s", set, want)
		}
	}
}
