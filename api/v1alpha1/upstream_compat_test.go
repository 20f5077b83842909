package v1alpha1_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/exporterset/exporterset/internal/testing/testenv"
)

// upstreamGroup is where upstream's ExporterSet and VirtualTargetClass CRDs are installed
// beside ours, so one API server judges the same manifest under both schemas.
const upstreamGroup = "upstream.virtualtarget.jumpstarter.dev"

// installUpstreamCRDs installs upstream's CRDs for our API under upstreamGroup, or skips when
// the reference folder is absent (never under CI).
func installUpstreamCRDs(t *testing.T) {
	t.Helper()
	dir, err := testenv.UpstreamCRDDir()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skipf("skipped: %v", err)
	}
	ctx := context.Background()
	for _, f := range []string{"virtualtarget.jumpstarter.dev_exportersets.yaml", "virtualtarget.jumpstarter.dev_virtualtargetclasses.yaml"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal(b, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		crd.Spec.Group = upstreamGroup
		crd.Name = crd.Spec.Names.Plural + "." + upstreamGroup
		crd.Spec.Names.ShortNames = nil
		crd.Spec.Names.Categories = nil
		if err := env.Client.Create(ctx, &crd); err != nil && !isAlreadyExists(err) {
			t.Fatalf("installing upstream %s: %v", f, err)
		}
		err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			var got apiextensionsv1.CustomResourceDefinition
			if err := env.Client.Get(ctx, client.ObjectKey{Name: crd.Name}, &got); err != nil {
				return false, nil
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("upstream CRD %s not established: %v", crd.Name, err)
		}
	}
}

// upstreamManifests are valid under upstream's CRDs, upstream's own samples among them.
var upstreamManifests = map[string]string{
	"upstream sample class": `
apiVersion: virtualtarget.jumpstarter.dev/v1alpha1
kind: VirtualTargetClass
metadata: {name: qemu-x86-64}
spec:
  provisioner: qemu.jumpstarter.dev
  bindingMode: Immediate
  reclaimPolicy: Delete
  scheduling:
    nodeSelector: {kubernetes.io/arch: amd64}
    tolerations: [{key: jumpstarter.dev/kvm, operator: Exists, effect: NoSchedule}]
    resources:
      limits: {devices.kubevirt.io/kvm: "1"}
      requests: {cpu: "2", memory: 2Gi}
  parameters: {arch: x86_64, machineType: q35, resources: {cpu: 2, memory: 2Gi, storage: 20Gi}}
`,
	"upstream sample set": `
apiVersion: virtualtarget.jumpstarter.dev/v1alpha1
kind: ExporterSet
metadata: {name: x86-64-pool}
spec:
  virtualTargetClassName: qemu-x86-64
  minReplicas: 0
  maxReplicas: 5
  minAvailableReplicas: 1
  scaleDownCooldown: 5m
  recycleStrategy: ExitAndReplace
  selector: {matchLabels: {board: x86-64-virtual}}
  template:
    metadata: {labels: {board: x86-64-virtual, arch: x86_64, virtual: "true"}}
    spec:
      drivers:
      - {name: qemu, type: jumpstarter_driver_qemu.driver.Qemu, config: {arch: x86_64, smp: 2, mem: 2G}}
`,
	"minimal set":   minimalSet,
	"minimal class": minimalClass,
	"full set":      fullSet,
	"class with everything": `
apiVersion: virtualtarget.jumpstarter.dev/v1alpha1
kind: VirtualTargetClass
metadata: {name: everything}
spec:
  provisioner: example.dev
  parameters: {a: [1, 2], b: {c: null}}
  images: {exporter: {image: e}, runtime: {image: r, imagePullPolicy: Never}}
  credentialsSecretRef: {name: creds}
  caBundleConfigMapRef: {name: ca, key: bundle.pem}
  bindingMode: WaitForFirstConsumer
  reclaimPolicy: Retain
`,
	"unbounded set with large floor": setWith("  minReplicas: 100\n  maxReplicas: 0\n  minAvailableReplicas: 10\n"),
}

func TestUpstreamManifestsValidWithSameDefaults(t *testing.T) {
	installUpstreamCRDs(t)
	ctx := context.Background()
	for name, doc := range upstreamManifests {
		t.Run(name, func(t *testing.T) {
			ns := namespace(t)
			ours := manifest(t, ns, doc)
			theirs := ours.DeepCopy()
			theirs.SetAPIVersion(upstreamGroup + "/v1alpha1")
			if err := env.Client.Create(ctx, theirs); err != nil {
				t.Fatalf("upstream's CRD rejects the test manifest (fix the test): %v", err)
			}
			if err := env.Client.Create(ctx, ours); err != nil {
				t.Fatalf("valid under upstream's CRD but rejected by ours: %v", err)
			}
			if d := cmp.Diff(theirs.Object["spec"], ours.Object["spec"]); d != "" {
				t.Errorf("defaulted spec differs (-upstream +ours):\n%s", d)
			}
		})
	}
}

// Both schemas refuse what the seed's CEL rules forbid.
func TestUpstreamAndOursRejectAlike(t *testing.T) {
	installUpstreamCRDs(t)
	ctx := context.Background()
	ns := namespace(t)
	for name, doc := range map[string]string{
		"min above max":          setWith("  minReplicas: 5\n  maxReplicas: 2\n"),
		"minAvailable above max": setWith("  minAvailableReplicas: 5\n  maxReplicas: 2\n"),
		"type and ref":           withDrivers(`[{name: a, type: a.B, ref: b}]`),
		"ref with config":        withDrivers(`[{name: a, ref: b, config: {x: 1}}]`),
		"bad ref":                withDrivers(`[{name: a, ref: b..c}]`),
		"bad enum":               setWith("  recycleStrategy: Reuse\n"),
	} {
		t.Run(name, func(t *testing.T) {
			ours := manifest(t, ns, doc)
			theirs := ours.DeepCopy()
			theirs.SetAPIVersion(upstreamGroup + "/v1alpha1")
			if err := env.Client.Create(ctx, theirs, client.DryRunAll); err == nil {
				t.Fatal("upstream accepts it (fix the test)")
			}
			if err := env.Client.Create(ctx, ours, client.DryRunAll); err == nil {
				t.Fatal("ours accepts what upstream rejects")
			}
		})
	}
}

func isAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }
