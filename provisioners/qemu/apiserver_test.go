package qemu

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/exporterset/exporterset/internal/testing/testenv"
)

// env is the package's real kube-apiserver: its own Pod validation judges every spec the
// provisioner renders.
var env *testenv.Env

// TestMain starts the apiserver once for the package (testenv.Main skips it when fuzzing: the
// fuzz target checks only what it can check alone).
func TestMain(m *testing.M) { testenv.Main(m, &env) }

// restrictedNamespace enforces the "restricted" Pod Security Standard, the strictest one:
// rendered Pods must pass it, the runtime container included.
const restrictedNamespace = "qemu-restricted"

// ensureRestrictedNamespace creates restrictedNamespace unless it exists.
func ensureRestrictedNamespace(t *testing.T) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: restrictedNamespace, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted", "pod-security.kubernetes.io/enforce-version": "latest",
	}}}
	if err := env.Client.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// TestGoldenInputsAndPodsAcceptedByAPIServer dry-runs every case's class and set (the inputs
// are valid objects) and the Pod rendered from them, in a namespace enforcing the restricted
// Pod Security Standard.
func TestGoldenInputsAndPodsAcceptedByAPIServer(t *testing.T) {
	ctx := context.Background()
	ensureRestrictedNamespace(t)
	p := New()
	cases := loadCases(t)

	// The control: the namespace really enforces (a runtime as root is refused).
	root := render(t, p, cases[0]).Pod
	root.Name, root.Namespace = "root-runtime", restrictedNamespace
	container(root, RuntimeContainer).SecurityContext.RunAsUser = ptr(int64(0))
	if err := env.DryRunCreate(ctx, root); err == nil || !strings.Contains(err.Error(), "violates PodSecurity") {
		t.Fatalf("a root runtime was not refused by Pod Security admission: %v", err)
	}

	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			if err := env.DryRunCreate(ctx, c.Class.DeepCopy()); err != nil {
				t.Errorf("class rejected: %v", err)
			}
			if err := env.DryRunCreate(ctx, c.Set.DeepCopy()); err != nil {
				t.Errorf("set rejected: %v", err)
			}
			pod := render(t, p, c).Pod
			pod.Name, pod.Namespace = c.Exporter.Name, restrictedNamespace
			if err := env.DryRunCreate(ctx, pod); err != nil {
				t.Errorf("pod rejected: %v", err)
			}
		})
	}
}

// TestFuzzSeedPodsAcceptedByAPIServer renders every fuzz seed in each fuzz class and dry-runs
// the Pods: the inputs the fuzz target starts from, judged by the real Pod validation instead
// of the fuzz target's structural checks. Seeds not marked refused must render in the plain
// class.
func TestFuzzSeedPodsAcceptedByAPIServer(t *testing.T) {
	ctx := context.Background()
	p := New()
	for _, seed := range fuzzSeeds {
		for classIndex := range fuzzClasses {
			req := fuzzRequest(seed.params, seed.driverConfig, classIndex)
			pod, err := p.RenderPod(ctx, req)
			if err != nil {
				if classIndex == 0 && !seed.refused {
					t.Errorf("params %s, driver config %s: %v", seed.params, seed.driverConfig, err)
				}
				continue // refused input; the validation tables cover the messages
			}
			if seed.refused {
				t.Errorf("params %s, driver config %s, class %d: accepted", seed.params, seed.driverConfig, classIndex)
			}
			pod.GenerateName = "fuzz-seed-"
			if err := env.DryRunCreate(ctx, pod); err != nil {
				t.Errorf("params %s, driver config %s, class %d: pod rejected: %v", seed.params, seed.driverConfig, classIndex, err)
			}
		}
	}
}
