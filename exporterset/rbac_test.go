package exporterset_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/testenv"
)

// The reconciler runs as a user bound to nothing but the generated least-privilege role,
// and scale-down still works: the cooldown clock needs only the status subresource.
func TestLeastPrivilegeRoleScalesDown(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(b, &role); err != nil {
		t.Fatal(err)
	}
	w := newWorld(t)
	role.Name = "exporterset-controller-" + w.ns
	w.create(&role)
	user := "exporterset-controller-under-test"
	w.create(&rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "exporterset-controller"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	})
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}

	w.class("fake")
	w.controller(cfg)
	set := w.set("pool", 2, 4, 0, func(s *vtv1alpha1.ExporterSet) { s.Spec.ScaleDownCooldown = &metav1.Duration{Duration: time.Second} })
	w.waitStatus("pool", 30*time.Second, "2 ready", func(s vtv1alpha1.ExporterSetStatus) bool { return s.ReadyReplicas == 2 })
	w.edit(set, func() { set.Spec.MinReplicas = 0 })
	w.waitStatus("pool", 30*time.Second, "scaled down to its standby", atRest)
	if n := len(w.exporters("pool")); n != 1 {
		t.Fatalf("%d exporters left, want the standby", n)
	}
}
