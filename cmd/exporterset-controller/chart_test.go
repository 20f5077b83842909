package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/exporterset/exporterset/internal/testing/testenv"
	"github.com/exporterset/exporterset/internal/testing/testproc"
)

// helmBinary is Helm as hack/tools/build.sh built it. Without it the chart tests skip,
// unless EXPORTERSET_REQUIRE_TOOLS is set (`make chart-check` and CI set it after building).
func helmBinary(t *testing.T) (helm, root string) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(root, "hack", "tools", "build.sh"), "--check", "helm").Output()
	if err != nil {
		if os.Getenv("EXPORTERSET_REQUIRE_TOOLS") != "" {
			t.Fatalf("helm is not built (hack/tools/build.sh helm): %v", err)
		}
		t.Skip("helm is not built: `make tools` builds it (make chart-check runs these tests with it)")
	}
	return strings.TrimSpace(string(out)), root
}

// run runs a command and returns its stdout, failing the test with its stderr.
func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	out, err := exec.Command(name, args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, ee.Stderr)
		}
		t.Fatal(err)
	}
	return out
}

// objects decodes a multi-document YAML stream.
func objects(t *testing.T, stream []byte) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(stream), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

func helmTemplate(t *testing.T, helm, root string, set ...string) []*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", "exporterset", filepath.Join(root, "charts", "exporterset"), "--namespace", "exporterset-system", "--include-crds"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	return objects(t, run(t, helm, args...))
}

// promOperatorVersion is the prometheus-operator release whose CRDs (ServiceMonitor,
// PrometheusRule) judge the chart's; the Go module proxy serves its source with them.
const promOperatorVersion = "v0.85.0"

// installMonitoringCRDs installs prometheus-operator's ServiceMonitor and PrometheusRule CRDs
// from its module, so that the chart's objects of those kinds are dry-run against their real
// schemas.
func installMonitoringCRDs(t *testing.T) {
	t.Helper()
	out, err := exec.Command("go", "mod", "download", "-json", "github.com/prometheus-operator/prometheus-operator@"+promOperatorVersion).Output()
	if err != nil {
		if os.Getenv("EXPORTERSET_REQUIRE_TOOLS") != "" {
			t.Fatalf("downloading prometheus-operator %s from the module proxy: %v", promOperatorVersion, err)
		}
		t.Skipf("prometheus-operator %s is not available from the module proxy: %v", promOperatorVersion, err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal(out, &mod); err != nil || mod.Dir == "" {
		t.Fatalf("go mod download: %v %s", err, out)
	}
	for _, kind := range []string{"servicemonitors", "prometheusrules"} {
		b, err := os.ReadFile(filepath.Join(mod.Dir, "example", "prometheus-operator-crd", "monitoring.coreos.com_"+kind+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range objects(t, b) {
			if err := env.Client.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
		}
	}
}

// TestChartLintsAndRendersValidManifests: helm lint passes, and every object the chart
// renders (defaults, and with every option on) passes a server-side dry-run, the
// ServiceMonitor and PrometheusRule against prometheus-operator's own CRDs.
func TestChartLintsAndRendersValidManifests(t *testing.T) {
	helm, root := helmBinary(t)
	run(t, helm, "lint", "--strict", filepath.Join(root, "charts", "exporterset"))
	installMonitoringCRDs(t)

	for _, ns := range []string{"exporterset-system", "chart-a", "chart-b"} {
		if err := env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	variants := map[string][]string{
		"defaults": nil,
		"everything on": {"alerts.enabled=true", "dashboard.enabled=true", "serviceMonitor.enabled=true",
			"watchNamespaces={chart-a,chart-b}", "provisioners={qemu.jumpstarter.dev}", "replicas=2",
			"plugins[0].name=kubevirt", "plugins[0].image=registry.example.com/kubevirt-plugin:v1",
			"pluginChecksums=0000  exporterset-provisioner-kubevirt", "extraArgs={--zap-log-level=debug}"},
	}
	for name, set := range variants {
		kinds := map[string]int{}
		for _, u := range helmTemplate(t, helm, root, set...) {
			kinds[u.GetKind()]++
			var err error
			// The monitoring CRDs were just created: the API server serves them once established.
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
				err = env.Client.Patch(ctx, u, client.Apply, client.DryRunAll, client.ForceOwnership, client.FieldOwner("chart-test"))
				if err == nil || !meta.IsNoMatchError(err) && !apierrors.IsNotFound(err) || time.Now().After(deadline) {
					break
				}
			}
			if err != nil {
				t.Errorf("%s: %s %s/%s rejected: %v", name, u.GetKind(), u.GetNamespace(), u.GetName(), err)
			}
		}
		t.Logf("%s: %v", name, kinds)
		if name == "everything on" {
			// Namespaced RBAC: a Role per watched namespace (and the leader-election one), no ClusterRole.
			if kinds["ClusterRole"] != 0 || kinds["Role"] != 3 || kinds["PrometheusRule"] != 1 || kinds["ServiceMonitor"] != 1 || kinds["ConfigMap"] != 2 {
				t.Errorf("everything on renders %v: want no ClusterRole, 3 Roles, a PrometheusRule, a ServiceMonitor and 2 ConfigMaps", kinds)
			}
		}
	}
}

// helmOnlyLabels are the labels Helm's conventions add to top-level objects; kustomize's
// objects do not carry them.
var helmOnlyLabels = []string{"helm.sh/chart", "app.kubernetes.io/managed-by", "app.kubernetes.io/instance"}

// TestChartMatchesKustomize: with default values the chart renders the same Deployment,
// Service, ServiceAccount, RBAC and CRDs as config/default, so the two cannot drift.
func TestChartMatchesKustomize(t *testing.T) {
	helm, root := helmBinary(t)
	assets, err := testenv.AssetsDir(false)
	if err != nil {
		t.Fatal(err)
	}
	key := func(u *unstructured.Unstructured) string {
		return u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
	}
	index := func(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
		out := map[string]*unstructured.Unstructured{}
		for _, u := range objs {
			if u.GetKind() == "Namespace" {
				continue // Helm installs into a namespace it does not own (--create-namespace)
			}
			labels := u.GetLabels()
			for _, l := range helmOnlyLabels {
				delete(labels, l)
			}
			u.SetLabels(labels)
			out[key(u)] = u
		}
		return out
	}
	kust := index(objects(t, run(t, filepath.Join(assets, "kubectl"), "kustomize", filepath.Join(root, "config", "default"))))
	chart := index(helmTemplate(t, helm, root))
	for k, want := range kust {
		got, ok := chart[k]
		if !ok {
			t.Errorf("config/default has %s; the chart does not render it", k)
			continue
		}
		if d := cmp.Diff(want.Object, got.Object); d != "" {
			t.Errorf("%s differs between config/default (-) and the chart (+):\n%s", k, d)
		}
	}
	for k := range chart {
		if _, ok := kust[k]; !ok {
			t.Errorf("the chart renders %s with default values; config/default does not", k)
		}
	}
	if len(kust) < 8 {
		t.Fatalf("config/default rendered only %d objects: %v", len(kust), kust)
	}
}

// TestChartInstalls installs the chart with Helm into the test API server, as an operator
// would from the repository, and uninstalls it. The CRDs are there already (testenv): Helm
// leaves existing CRDs alone.
func TestChartInstalls(t *testing.T) {
	helm, root := helmBinary(t)
	ns, err := env.CreateNamespace(ctx, "helm")
	if err != nil {
		t.Fatal(err)
	}
	kc := kubeconfig(t)
	chart := filepath.Join(root, "charts", "exporterset")
	run(t, helm, "install", "exporterset", chart, "--kubeconfig", kc, "--namespace", ns)
	defer run(t, helm, "uninstall", "exporterset", "--kubeconfig", kc, "--namespace", ns)
	status := string(run(t, helm, "status", "exporterset", "--kubeconfig", kc, "--namespace", ns))
	if !strings.Contains(status, "STATUS: deployed") {
		t.Errorf("helm status:\n%s", status)
	}
	var sa corev1.ServiceAccount
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "exporterset-controller"}, &sa); err != nil {
		t.Errorf("the release's ServiceAccount: %v", err)
	}
	var dep unstructured.Unstructured
	dep.SetAPIVersion("apps/v1")
	dep.SetKind("Deployment")
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "exporterset-controller"}, &dep); err != nil {
		t.Errorf("the release's Deployment: %v", err)
	}
}

// TestChartNamespacedRBACServesAPool installs the chart with watchNamespaces, then runs the
// binary as the release's ServiceAccount (impersonated) with leader election: the namespaced
// Roles alone let it serve the sample pool, and it meets no "forbidden".
func TestChartNamespacedRBACServesAPool(t *testing.T) {
	helm, root := helmBinary(t)
	pool := samplesIn(t)
	release, err := env.CreateNamespace(ctx, "helm-ns")
	if err != nil {
		t.Fatal(err)
	}
	admin := kubeconfig(t)
	run(t, helm, "install", "exporterset", filepath.Join(root, "charts", "exporterset"), "--kubeconfig", admin,
		"--namespace", release, "--set", "watchNamespaces={"+pool+"}")
	defer run(t, helm, "uninstall", "exporterset", "--kubeconfig", admin, "--namespace", release)

	// The same credentials, impersonating the ServiceAccount the chart binds its Roles to.
	cfg, err := clientcmd.LoadFromFile(admin)
	if err != nil {
		t.Fatal(err)
	}
	for _, u := range cfg.AuthInfos {
		u.Impersonate = "system:serviceaccount:" + release + ":exporterset-controller"
		u.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + release, "system:authenticated"}
	}
	asSA := filepath.Join(t.TempDir(), "kubeconfig-sa")
	if err := clientcmd.WriteToFile(*cfg, asSA); err != nil {
		t.Fatal(err)
	}

	startSim(t, pool)
	p := start(t, "run", "--kubeconfig", asSA, "--namespace", pool, "--leader-elect", "--leader-election-namespace", release,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0")
	defer p.Stop(t, 25*time.Second)
	testproc.WaitFor(t, 60*time.Second, "the sample pool's warm buffer, served under the chart's namespaced RBAC", func() (bool, string) {
		st := poolStatus(t, pool)
		return st.AvailableReplicas == 1, fmt.Sprintf("%+v\n%s", st, testproc.Tail(p.Output(), 10))
	})
	if out := p.Output(); strings.Contains(strings.ToLower(out), "forbidden") {
		t.Errorf("the controller met a permission it lacks:\n%s", testproc.Tail(out, 30))
	}
}

// TestChartDashboardQueriesParse gives every query of the Grafana dashboard to promtool as a
// recording rule (Grafana's variables replaced by what they expand to), so a query that is
// not valid PromQL fails here rather than as an empty panel.
func TestChartDashboardQueriesParse(t *testing.T) {
	_, root := helmBinary(t)
	out, err := exec.Command(filepath.Join(root, "hack", "tools", "build.sh"), "--check", "promtool").Output()
	if err != nil {
		if os.Getenv("EXPORTERSET_REQUIRE_TOOLS") != "" {
			t.Fatalf("promtool is not built (hack/tools/build.sh promtool): %v", err)
		}
		t.Skip("promtool is not built: `make tools` builds it")
	}
	promtool := strings.TrimSpace(string(out))
	b, err := os.ReadFile(filepath.Join(root, "charts", "exporterset", "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Targets []struct{ Expr string } `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	expand := strings.NewReplacer("$__rate_interval", "5m", "$namespace", ".*", "$exporterset", ".*")
	var rules []map[string]string
	for i, p := range dash.Panels {
		for j, q := range p.Targets {
			rules = append(rules, map[string]string{"record": fmt.Sprintf("dashboard:panel%d:query%d", i, j), "expr": expand.Replace(q.Expr)})
		}
	}
	doc, err := json.Marshal(map[string]any{"groups": []any{map[string]any{"name": "dashboard", "rules": rules}}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "dashboard-queries.json")
	if err := os.WriteFile(path, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	res := string(run(t, promtool, "check", "rules", path))
	if want := fmt.Sprintf("SUCCESS: %d rules found", len(rules)); len(rules) < 5 || !strings.Contains(res, want) {
		t.Errorf("promtool check rules on %d dashboard queries: %s", len(rules), res)
	}
}
