package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/exporterset/exporterset/internal/testing/testenv"
)

// config/default renders with kustomize, and the API server accepts every object in it
// (server-side dry-run apply): the Deployment, RBAC and CRDs are judged for real.
func TestKustomizeDefaultRendersAndIsValid(t *testing.T) {
	assets, err := testenv.AssetsDir(false)
	if err != nil {
		t.Fatal(err)
	}
	kubectl := filepath.Join(assets, "kubectl")
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(kubectl, "kustomize", filepath.Join(root, "config", "default")).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("kubectl kustomize: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	image := defaultImage(t, filepath.Join(root, "config", "default", "kustomization.yaml"))
	// A released version, the chart's appVersion (what `make image` tags with), never :latest.
	if app := chartAppVersion(t, root); app == "" || app == "latest" || !strings.HasSuffix(image, ":"+app) {
		t.Errorf("config/default's image %s: want the tag to be the chart's appVersion %q, a real version", image, app)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(out), 4096)
	kinds := map[string]int{}
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatal(err)
		}
		if len(u.Object) == 0 {
			continue
		}
		kinds[u.GetKind()]++
		if u.GetKind() == "Deployment" {
			// The image is the one config/default's `images:` names: a user overrides it there.
			containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
			for _, c := range containers {
				if got := c.(map[string]any)["image"]; got != image {
					t.Errorf("Deployment %s runs image %v, want %s from config/default's images", u.GetName(), got, image)
				}
			}
		}
		if u.GetKind() == "Namespace" {
			// Dry-run would not create it, and the namespaced objects need it.
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: u.GetName()}}
			if err := env.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
			continue
		}
		if err := env.Client.Patch(ctx, u, client.Apply, client.DryRunAll, client.ForceOwnership, client.FieldOwner("kustomize-test")); err != nil {
			t.Errorf("%s %s rejected: %v", u.GetKind(), u.GetName(), err)
		}
	}
	for _, want := range []string{"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount", "Deployment", "Service", "Namespace"} {
		if kinds[want] == 0 {
			t.Errorf("config/default renders no %s (got %v)", want, kinds)
		}
	}
}

// chartAppVersion is the chart's appVersion.
func chartAppVersion(t *testing.T, root string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "charts", "exporterset", "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c.AppVersion
}

// defaultImage is the newName:newTag of the `controller` entry of a kustomization's images.
func defaultImage(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Images []struct{ Name, NewName, NewTag string } `json:"images"`
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatal(err)
	}
	for _, i := range k.Images {
		if i.Name == "controller" && i.NewName != "" && i.NewTag != "" {
			return i.NewName + ":" + i.NewTag
		}
	}
	t.Fatalf("%s sets no newName and newTag for image controller", path)
	return ""
}
