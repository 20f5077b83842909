package qemu

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

func TestDescribe(t *testing.T) {
	custom := provisioner.Images{Runtime: provisioner.Image{Image: "mirror.example.com/qemu-runtime:v1"}}
	d, err := New(WithDefaultImages(custom), WithVersion("v1.2.3")).Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := provisioner.Images{
		Exporter: provisioner.Image{Image: DefaultExporterImage, PullPolicy: corev1.PullIfNotPresent}, // empty role keeps the default
		Runtime:  provisioner.Image{Image: "mirror.example.com/qemu-runtime:v1", PullPolicy: corev1.PullIfNotPresent},
	}
	if diff := cmp.Diff(want, d.DefaultImages); diff != "" {
		t.Errorf("default images (-want +got):\n%s", diff)
	}
	if !slices.Equal(d.Names, []string{Name}) || d.Version != "v1.2.3" {
		t.Errorf("names %v version %q", d.Names, d.Version)
	}
	if !json.Valid(d.ParameterSchema) {
		t.Error("parameter schema is not JSON")
	}
	d.ParameterSchema[0] = 'x' // the caller's copy
	if d2, _ := New().Describe(context.Background()); d2.ParameterSchema[0] != '{' || d2.Version == "" {
		t.Errorf("schema shared with callers, or no default version %q", d2.Version)
	}
	if err := New().Cleanup(context.Background(), nil); err != nil {
		t.Errorf("Cleanup: %v", err)
	}
}

// schemaNode is the part of schema.json the sync test reads.
type schemaNode struct {
	Properties map[string]schemaNode `json:"properties"`
	Default    any                   `json:"default"`
	Enum       []any                 `json:"enum"`
}

// TestSchemaMatchesValidation keeps schema.json, the validator's keys and the defaults in step.
func TestSchemaMatchesValidation(t *testing.T) {
	var root schemaNode
	if err := json.Unmarshal(parameterSchema, &root); err != nil {
		t.Fatal(err)
	}
	keys := func(n schemaNode) []string {
		var k []string
		for key := range n.Properties {
			k = append(k, key)
		}
		sort.Strings(k)
		return k
	}
	for _, tc := range []struct {
		node schemaNode
		want []string
	}{
		{root, topKeys}, {root.Properties["resources"], resourcesKeys}, {root.Properties["storage"], storageKeys},
	} {
		if diff := cmp.Diff(tc.want, keys(tc.node)); diff != "" {
			t.Errorf("schema keys (-validator +schema):\n%s", diff)
		}
	}
	res, st := root.Properties["resources"].Properties, root.Properties["storage"].Properties
	got := map[string]any{
		"arch": root.Properties["arch"].Default, "firmware": root.Properties["firmware"].Default,
		"cpu": res["cpu"].Default, "memory": res["memory"].Default, "storage": res["storage"].Default,
		"fsOverhead": st["fsOverhead"].Default,
	}
	want := map[string]any{
		"arch": defaultArch, "firmware": defaultFirmware, "cpu": float64(2), "memory": defaultMemory,
		"storage": defaultStorage, "fsOverhead": defaultFSOverhead,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("schema defaults (-code +schema):\n%s", diff)
	}
	if defaultCPU != "2" {
		t.Errorf("defaultCPU %q: update the schema's cpu default", defaultCPU)
	}
}

// TestREADMEDocumentsEveryParameter checks that the README's table has a row for every
// parameter, with its default.
func TestREADMEDocumentsEveryParameter(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	var params []string
	for _, k := range topKeys {
		switch k {
		case "resources":
			for _, r := range resourcesKeys {
				params = append(params, "resources."+r)
			}
		case "storage":
			for _, s := range storageKeys {
				params = append(params, "storage."+s)
			}
		default:
			params = append(params, k)
		}
	}
	defaults := map[string]string{
		"arch": "`x86_64`", "firmware": "`uefi`", "machineType": "`q35`", "resources.cpu": "`2`",
		"resources.memory": "`512Mi`", "resources.storage": "`10Gi`", "storage.accessModes": "`[ReadWriteOnce]`",
		"storage.fsOverhead": "`10%`", "storage.storageClassName": "none",
	}
	for _, p := range params {
		i := strings.Index(readme, "| `"+p+"` |")
		if i < 0 {
			t.Errorf("README has no table row for %s", p)
			continue
		}
		row := readme[i:]
		row = row[:strings.IndexByte(row, '\n')]
		if d, ok := defaults[p]; !ok || !strings.Contains(row, d) {
			t.Errorf("README row for %s does not give its default %s: %s", p, d, row)
		}
	}
}

func TestAccelerator(t *testing.T) {
	kvm := corev1.ResourceList{"devices.kubevirt.io/kvm": resource.MustParse("1")}
	for _, tc := range []struct {
		name, params, driver string
		nodeArch             string
		limits, requests     corev1.ResourceList
		want                 string
	}{
		{name: "no device", want: AcceleratorTCG},
		{name: "KubeVirt device", limits: kvm, want: AcceleratorKVM},
		{name: "generic device plugin", limits: corev1.ResourceList{"squat.ai/kvm": resource.MustParse("1")}, want: AcceleratorKVM},
		{name: "zero devices", limits: corev1.ResourceList{"devices.kubevirt.io/kvm": resource.MustParse("0")}, want: AcceleratorTCG},
		{name: "not a KVM device", limits: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}, want: AcceleratorTCG},
		{name: "matching node arch", nodeArch: "amd64", limits: kvm, want: AcceleratorKVM},
		{name: "aarch64 guest on amd64 nodes", params: `{"arch":"aarch64"}`, nodeArch: "amd64", limits: kvm, want: AcceleratorTCG},
		{name: "aarch64 guest on arm64 nodes", params: `{"arch":"aarch64"}`, nodeArch: "arm64", limits: kvm, want: AcceleratorKVM},
		{name: "the driver's arch counts", driver: `{"arch":"aarch64"}`, nodeArch: "amd64", limits: kvm, want: AcceleratorTCG},
		{name: "an arch the provisioner does not know", driver: `{"arch":"riscv64"}`, limits: kvm, want: AcceleratorTCG},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := baseRequest(tc.params, qemuDriver(tc.driver))
			req.Class.Spec.Scheduling = &vtv1alpha1.Scheduling{Resources: &corev1.ResourceRequirements{Limits: tc.limits, Requests: tc.requests}}
			if tc.nodeArch != "" {
				req.Class.Spec.Scheduling.NodeSelector = map[string]string{corev1.LabelArchStable: tc.nodeArch}
			}
			pod, err := New().RenderPod(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if got := pod.Annotations[AnnotationAccelerator]; got != tc.want {
				t.Errorf("accelerator %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRuntimeEphemeralStorage(t *testing.T) {
	q := resource.MustParse
	for _, tc := range []struct {
		name, params string
		requests     corev1.ResourceList
		want         corev1.ResourceList
	}{
		{name: "raised to the emptyDir", want: corev1.ResourceList{corev1.ResourceEphemeralStorage: q("11Gi")}},
		{name: "a larger request kept", requests: corev1.ResourceList{corev1.ResourceEphemeralStorage: q("50Gi")},
			want: corev1.ResourceList{corev1.ResourceEphemeralStorage: q("50Gi")}},
		{name: "a smaller request raised", requests: corev1.ResourceList{corev1.ResourceEphemeralStorage: q("1Gi"), corev1.ResourceCPU: q("1")},
			want: corev1.ResourceList{corev1.ResourceEphemeralStorage: q("11Gi"), corev1.ResourceCPU: q("1")}},
		{name: "a claim instead: nothing added", params: `{"storage":{"storageClassName":"fast"}}`, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := baseRequest(tc.params, qemuDriver(""))
			if tc.requests != nil {
				req.Class.Spec.Scheduling = &vtv1alpha1.Scheduling{Resources: &corev1.ResourceRequirements{Requests: tc.requests}}
			}
			before := req.Class.DeepCopy()
			pod, err := New().RenderPod(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if !apiequality.Semantic.DeepEqual(before, req.Class) {
				t.Error("the class was modified")
			}
			got := container(pod, RuntimeContainer).Resources.Requests
			if diff := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
				t.Errorf("runtime requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRenderPodImagesAndCredentials(t *testing.T) {
	req := baseRequest(``, qemuDriver(""))
	req.Images = provisioner.Images{Runtime: provisioner.Image{Image: "r:1"}} // no exporter, no pull policy
	req.Class.Spec.CredentialsSecretRef = &corev1.LocalObjectReference{Name: "creds"}
	pod, err := New().RenderPod(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		LauncherInitContainer: DefaultExporterImage, ExporterContainer: DefaultExporterImage, RuntimeContainer: "r:1",
	} {
		c := container(pod, name)
		if c.Image != want || c.ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("%s: image %s %s, want %s IfNotPresent", name, c.Image, c.ImagePullPolicy, want)
		}
	}
	wantEnvFrom := []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}}}
	for name, want := range map[string][]corev1.EnvFromSource{
		LauncherInitContainer: nil, ExporterContainer: wantEnvFrom, RuntimeContainer: wantEnvFrom,
	} {
		if diff := cmp.Diff(want, container(pod, name).EnvFrom); diff != "" {
			t.Errorf("%s envFrom (-want +got):\n%s", name, diff)
		}
	}

	req.ConfigSecretName = ""
	if _, err := New().RenderPod(context.Background(), req); provisioner.CodeOf(err) != provisioner.CodeInternal {
		t.Errorf("without a config Secret: %v, want an internal error", err)
	}
}
