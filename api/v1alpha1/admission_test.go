package v1alpha1_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// manifest decodes YAML into an unstructured object, so tests send exactly what a person
// would write with kubectl (omitted fields stay omitted, bad enum values reach the server).
func manifest(t *testing.T, ns, doc string) *unstructured.Unstructured {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatalf("bad test manifest: %v\n%s", err, doc)
	}
	// Decoded as JSON, so integers stay int64 and big ones keep every digit.
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(j); err != nil {
		t.Fatalf("bad test manifest: %v\n%s", err, doc)
	}
	u.SetNamespace(ns)
	return u
}

func namespace(t *testing.T) string {
	t.Helper()
	ns, err := env.CreateNamespace(context.Background(), "admission")
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

const minimalSet = `
apiVersion: virtualtarget.jumpstarter.dev/v1alpha1
kind: ExporterSet
metadata: {name: minimal}
spec:
  virtualTargetClassName: qemu
  selector: {matchLabels: {board: x86}}
  template: {metadata: {labels: {board: x86}}}
`

const minimalClass = `
apiVersion: virtualtarget.jumpstarter.dev/v1alpha1
kind: VirtualTargetClass
metadata: {name: minimal}
spec:
  provisioner: qemu.jumpstarter.dev
  caBundleConfigMapRef: {name: ca}
`

func TestDefaultsAreApplied(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	if err := env.Client.Create(ctx, manifest(t, ns, minimalSet)); err != nil {
		t.Fatal(err)
	}
	var set vtv1alpha1.ExporterSet
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "minimal"}, &set); err != nil {
		t.Fatal(err)
	}
	four := int32(4)
	want := vtv1alpha1.ExporterSetSpec{
		Selector:               metav1.LabelSelector{MatchLabels: map[string]string{"board": "x86"}},
		Template:               vtv1alpha1.ExporterTemplate{Metadata: vtv1alpha1.ExporterTemplateMetadata{Labels: map[string]string{"board": "x86"}}},
		VirtualTargetClassName: "qemu",
		MinReplicas:            0,
		MaxReplicas:            &four,
		MinAvailableReplicas:   0,
		ScaleDownCooldown:      &metav1.Duration{Duration: 5 * 60e9},
		RecycleStrategy:        vtv1alpha1.RecycleExitAndReplace,
	}
	if d := cmp.Diff(want, set.Spec); d != "" {
		t.Errorf("defaulted ExporterSet spec (-want +got):\n%s", d)
	}

	if err := env.Client.Create(ctx, manifest(t, ns, minimalClass)); err != nil {
		t.Fatal(err)
	}
	var class vtv1alpha1.VirtualTargetClass
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "minimal"}, &class); err != nil {
		t.Fatal(err)
	}
	wantClass := vtv1alpha1.VirtualTargetClassSpec{
		Provisioner:          "qemu.jumpstarter.dev",
		CABundleConfigMapRef: &vtv1alpha1.CABundleConfigMapRef{Name: "ca", Key: vtv1alpha1.DefaultCABundleKey},
		BindingMode:          vtv1alpha1.BindingImmediate,
		ReclaimPolicy:        vtv1alpha1.ReclaimDelete,
	}
	if d := cmp.Diff(wantClass, class.Spec); d != "" {
		t.Errorf("defaulted VirtualTargetClass spec (-want +got):\n%s", d)
	}
}

// setWith returns the minimal ExporterSet with extra spec YAML appended (indented by the caller).
func setWith(spec string) string { return minimalSet + spec }

// withDrivers returns the minimal ExporterSet whose template has this drivers list (YAML flow).
func withDrivers(list string) string {
	return strings.Replace(minimalSet, "template: {metadata: {labels: {board: x86}}}",
		"template: {metadata: {labels: {board: x86}}, spec: {drivers: "+list+"}}", 1)
}

func TestAdmissionRejects(t *testing.T) {
	cases := []rejection{
		{"min above max", setWith("  minReplicas: 5\n  maxReplicas: 2\n"),
			"minReplicas must be less than or equal to maxReplicas (when maxReplicas is not 0)"},
		{"minAvailable above max", setWith("  minAvailableReplicas: 5\n  maxReplicas: 2\n"),
			"minAvailableReplicas must be less than or equal to maxReplicas (when maxReplicas is not 0)"},
		{"min above default max", setWith("  minReplicas: 5\n"),
			"minReplicas must be less than or equal to maxReplicas"},
		{"negative minReplicas", setWith("  minReplicas: -1\n"), "spec.minReplicas: Invalid value: -1: spec.minReplicas in body should be greater than or equal to 0"},
		{"negative maxReplicas", setWith("  maxReplicas: -1\n"), "spec.maxReplicas in body should be greater than or equal to 0"},
		{"negative minAvailableReplicas", setWith("  minAvailableReplicas: -1\n"), "spec.minAvailableReplicas in body should be greater than or equal to 0"},
		{"bad recycle strategy", setWith("  recycleStrategy: Reuse\n"), `spec.recycleStrategy: Unsupported value: "Reuse": supported values: "ExitAndReplace", "InPlaceReuse"`},
		{"bad exporter pull policy", setWith("  images: {exporter: {image: x, imagePullPolicy: Sometimes}}\n"), `spec.images.exporter.imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "Never", "IfNotPresent"`},
		{"bad runtime pull policy", setWith("  images: {runtime: {image: x, imagePullPolicy: always}}\n"), `spec.images.runtime.imagePullPolicy: Unsupported value: "always"`},
		{"bad cooldown", setWith("  scaleDownCooldown: five minutes\n"), "scaleDownCooldown must be a non-negative duration such as 5m or 90s"},
		{"negative cooldown", setWith("  scaleDownCooldown: -5m\n"), "scaleDownCooldown must be a non-negative duration such as 5m or 90s"},
		{"parameters not an object", setWith("  parameters: [1, 2]\n"), `spec.parameters: Invalid value: "array": spec.parameters in body must be of type object`},
		{"empty class name", strings.Replace(minimalSet, "virtualTargetClassName: qemu", `virtualTargetClassName: ""`, 1), "spec.virtualTargetClassName in body should be at least 1 chars long"},
		{"missing selector", strings.Replace(minimalSet, "  selector: {matchLabels: {board: x86}}\n", "", 1), `spec.selector: Required value`},
		{"missing class name", strings.Replace(minimalSet, "  virtualTargetClassName: qemu\n", "", 1), `spec.virtualTargetClassName: Required value`},
		{"reserved template label", strings.Replace(minimalSet, "{labels: {board: x86}}", "{labels: {board: x86, jumpstarter.dev/name: x}}", 1), "labels with the jumpstarter.dev/ prefix are reserved for the exporter"},
		{"driver without name", withDrivers(`[{type: a.B}]`), "spec.template.spec.drivers[0].name: Required value"},
		{"driver with empty name", withDrivers(`[{name: '', type: a.B}]`), "spec.template.spec.drivers[0].name in body should be at least 1 chars long"},
		{"driver with neither type nor ref", withDrivers(`[{name: a}]`), "either type or ref must be set"},
		{"driver with type and ref", withDrivers(`[{name: a, type: a.B, ref: b}]`), "type and ref are mutually exclusive"},
		{"ref with config", withDrivers(`[{name: a, ref: b, config: {x: 1}}]`), "ref entries must not have config"},
		{"ref with empty segment", withDrivers(`[{name: a, ref: b..c}]`), `spec.template.spec.drivers[0].ref in body should match '^[^.]+([.][^.]+)*$'`},
		{"ref with leading dot", withDrivers(`[{name: a, ref: .b}]`), `should match '^[^.]+([.][^.]+)*$'`},
		{"empty type", withDrivers(`[{name: a, type: ''}]`), "spec.template.spec.drivers[0].type in body should be at least 1 chars long"},
		{"duplicate driver names", withDrivers(`[{name: a, type: a.B}, {name: a, ref: c}]`), "driver names must be unique"},
		{"driver config not an object", withDrivers(`[{name: a, type: a.B, config: 3}]`), "spec.template.spec.drivers[0].config in body must be of type object"},
		{"class without provisioner", strings.Replace(minimalClass, "  provisioner: qemu.jumpstarter.dev\n", "", 1), "spec.provisioner: Required value"},
		{"class with empty provisioner", strings.Replace(minimalClass, "provisioner: qemu.jumpstarter.dev", `provisioner: ""`, 1), "spec.provisioner in body should be at least 1 chars long"},
		{"bad binding mode", minimalClass + "  bindingMode: Lazy\n", `spec.bindingMode: Unsupported value: "Lazy": supported values: "Immediate", "WaitForFirstConsumer"`},
		{"bad reclaim policy", minimalClass + "  reclaimPolicy: Recycle\n", `spec.reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"`},
		{"class bad pull policy", minimalClass + "  images: {runtime: {image: x, imagePullPolicy: Maybe}}\n", `spec.images.runtime.imagePullPolicy: Unsupported value: "Maybe"`},
		{"ca bundle without name", strings.Replace(minimalClass, "{name: ca}", "{key: x}", 1), "spec.caBundleConfigMapRef.name: Required value"},
		{"class parameters not an object", minimalClass + "  parameters: 3\n", "spec.parameters in body must be of type object"},
	}
	checkRejected(t, cases)
}

// rejection is a manifest the API server must refuse, with what its error must say.
type rejection struct{ name, doc, want string }

// checkRejected creates each case's manifest (dry run) and wants an Invalid error saying
// its want.
func checkRejected(t *testing.T, cases []rejection) {
	t.Helper()
	ns := namespace(t)
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := env.Client.Create(ctx, manifest(t, ns, tc.doc), client.DryRunAll)
			if err == nil {
				t.Fatalf("accepted; want rejection containing %q", tc.want)
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error does not contain %q:\n%v", tc.want, err)
			}
		})
	}
}

func TestAdmissionAccepts(t *testing.T) {
	cases := []struct{ name, doc string }{
		{"min above max when max is 0 (unbounded)", setWith("  minReplicas: 50\n  minAvailableReplicas: 20\n  maxReplicas: 0\n")},
		{"min equal max", setWith("  minReplicas: 3\n  maxReplicas: 3\n  minAvailableReplicas: 3\n")},
		{"zero cooldown", setWith("  scaleDownCooldown: 0s\n")},
		{"compound cooldown", setWith("  scaleDownCooldown: 1h30m\n")},
		{"nested ref", withDrivers(`[{name: q, type: a.B}, {name: power, ref: q.power}]`)},
		{"null-free schemaless parameters", setWith("  parameters: {a: {b: [1, {c: d}]}, e: 1.5}\n")},
		{"in-place reuse", setWith("  recycleStrategy: InPlaceReuse\n")},
		{"wait for first consumer, retain", minimalClass + "  bindingMode: WaitForFirstConsumer\n  reclaimPolicy: Retain\n"},
	}
	ns := namespace(t)
	ctx := context.Background()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := env.Client.Create(ctx, manifest(t, ns, tc.doc), client.DryRunAll); err != nil {
				t.Fatalf("rejected: %v", err)
			}
		})
	}
}

const fullSet = `
apiVersion: virtualtarget.jumpstarter.dev/v1alpha1
kind: ExporterSet
metadata: {name: full}
spec:
  virtualTargetClassName: qemu-x86
  minReplicas: 1
  maxReplicas: 5
  minAvailableReplicas: 2
  scaleDownCooldown: 90s
  recycleStrategy: InPlaceReuse
  parameters:
    arch: x86_64
    resources: {cpu: 2, memory: 2Gi}
    big: 9007199254740993
    list: [1, "two", {three: 3}]
  images:
    exporter: {image: "quay.io/org/exporter:v1", imagePullPolicy: Always}
    runtime: {image: "quay.io/org/runtime:v1", imagePullPolicy: Never}
  selector:
    matchLabels: {board: x86-64-virtual}
    matchExpressions: [{key: arch, operator: In, values: [x86_64]}]
  template:
    metadata:
      labels: {board: x86-64-virtual, arch: x86_64}
      annotations: {owner: team-a}
    spec:
      drivers:
      - {name: qemu, type: jumpstarter_driver_qemu.driver.Qemu, config: {arch: x86_64, smp: 2, mem: 2G, nested: {a: [1]}}}
      - {name: power, ref: qemu.power}
`

func TestFullExporterSetRoundTrips(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	in := manifest(t, ns, fullSet)
	sent := in.DeepCopy()
	if err := env.Client.Create(ctx, in); err != nil {
		t.Fatal(err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(in.GroupVersionKind())
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(in), got); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(sent.Object["spec"], got.Object["spec"]); d != "" {
		t.Errorf("spec changed on the way through the API server (-sent +stored):\n%s", d)
	}
	// And through the Go types: decoding and re-encoding keeps every field.
	var typed vtv1alpha1.ExporterSet
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(in), &typed); err != nil {
		t.Fatal(err)
	}
	// metav1.Duration writes its canonical form ("90s" becomes "1m30s"): compare it as a
	// duration, everything else as JSON.
	if typed.Spec.ScaleDownCooldown == nil || typed.Spec.ScaleDownCooldown.Duration != 90*time.Second {
		t.Errorf("scaleDownCooldown = %v, want 90s", typed.Spec.ScaleDownCooldown)
	}
	typedSpec := typed.Spec.DeepCopy()
	typedSpec.ScaleDownCooldown = nil
	sentSpec := sent.DeepCopy()
	unstructured.RemoveNestedField(sentSpec.Object, "spec", "scaleDownCooldown")
	if d := cmp.Diff(normalize(t, sentSpec.Object["spec"]), normalize(t, typedSpec)); d != "" {
		t.Errorf("Go types lose or change fields (-sent +typed):\n%s", d)
	}
}

// normalize round-trips v through JSON with exact numbers, so int64 and json.Number compare
// alike and no digit is lost on either side.
func normalize(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestScaleSubresource(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	set := manifest(t, ns, minimalSet)
	if err := env.Client.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	// The controller publishes the selector in status; the scale subresource reports it.
	var typed vtv1alpha1.ExporterSet
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(set), &typed); err != nil {
		t.Fatal(err)
	}
	typed.Status.Replicas = 3
	typed.Status.Selector = "board=x86"
	if err := env.Client.Status().Update(ctx, &typed); err != nil {
		t.Fatal(err)
	}

	scale := &autoscalingv1.Scale{}
	if err := env.Client.SubResource("scale").Get(ctx, &typed, scale); err != nil {
		t.Fatal(err)
	}
	if scale.Spec.Replicas != 4 || scale.Status.Replicas != 3 || scale.Status.Selector != "board=x86" {
		t.Fatalf("scale = spec %d status %d selector %q; want 4, 3, board=x86", scale.Spec.Replicas, scale.Status.Replicas, scale.Status.Selector)
	}

	scale.Spec.Replicas = 7
	if err := env.Client.SubResource("scale").Update(ctx, &typed, client.WithSubResourceBody(scale)); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(set), &typed); err != nil {
		t.Fatal(err)
	}
	if typed.Spec.MaxReplicas == nil || *typed.Spec.MaxReplicas != 7 {
		t.Fatalf("kubectl scale did not move maxReplicas: %v", typed.Spec.MaxReplicas)
	}
	// Scaling below minReplicas is refused by the same CEL rule as an edit.
	typed.Spec.MinReplicas = 5
	if err := env.Client.Update(ctx, &typed); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.SubResource("scale").Get(ctx, &typed, scale); err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 2
	err := env.Client.SubResource("scale").Update(ctx, &typed, client.WithSubResourceBody(scale))
	if err == nil || !strings.Contains(err.Error(), "minReplicas must be less than or equal to maxReplicas") {
		t.Fatalf("scale below minReplicas: got %v", err)
	}
}

func TestStatusOnlyThroughSubresource(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	set := manifest(t, ns, minimalSet)
	if err := env.Client.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	var typed vtv1alpha1.ExporterSet
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(set), &typed); err != nil {
		t.Fatal(err)
	}
	// An update of the main resource ignores status.
	typed.Status.Replicas = 9
	typed.Spec.MinReplicas = 1
	if err := env.Client.Update(ctx, &typed); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(set), &typed); err != nil {
		t.Fatal(err)
	}
	if typed.Status.Replicas != 0 || typed.Spec.MinReplicas != 1 {
		t.Fatalf("main resource update: status.replicas=%d (want 0) spec.minReplicas=%d (want 1)", typed.Status.Replicas, typed.Spec.MinReplicas)
	}
	// A status update ignores spec.
	typed.Status.Replicas = 2
	typed.Spec.MinReplicas = 3
	if err := env.Client.Status().Update(ctx, &typed); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(set), &typed); err != nil {
		t.Fatal(err)
	}
	if typed.Status.Replicas != 2 || typed.Spec.MinReplicas != 1 {
		t.Fatalf("status update: status.replicas=%d (want 2) spec.minReplicas=%d (want 1)", typed.Status.Replicas, typed.Spec.MinReplicas)
	}
	// Every counter is serialized, zero included.
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(set.GroupVersionKind())
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(set), u); err != nil {
		t.Fatal(err)
	}
	status, _ := u.Object["status"].(map[string]any)
	for _, k := range []string{"replicas", "readyReplicas", "availableReplicas", "leasedReplicas", "unavailableReplicas",
		"exportersActive", "exportersIdle", "exportersDisabled", "exportersOffline",
		"podsPending", "podsRunning", "podsFailed", "podsUnknown"} {
		if _, ok := status[k]; !ok {
			t.Errorf("status.%s not serialized: %v", k, status)
		}
	}
}
