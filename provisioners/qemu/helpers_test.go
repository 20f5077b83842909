package qemu

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// testCase is a testdata/<name>.input.yaml file: a class, a set and the instance's Exporter.
type testCase struct {
	Name     string
	Class    vtv1alpha1.VirtualTargetClass
	Set      vtv1alpha1.ExporterSet
	Exporter jumpstarterv1alpha1.Exporter
}

// loadCases reads every testdata/*.input.yaml, sorted by name.
func loadCases(t testing.TB) []testCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "*.input.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test cases in testdata: %v", err)
	}
	var cases []testCase
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var in struct {
			Class    vtv1alpha1.VirtualTargetClass `json:"class"`
			Set      vtv1alpha1.ExporterSet        `json:"set"`
			Exporter metav1.ObjectMeta             `json:"exporter"`
		}
		if err := yaml.UnmarshalStrict(b, &in); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		cases = append(cases, testCase{
			Name:     strings.TrimSuffix(filepath.Base(f), ".input.yaml"),
			Class:    in.Class,
			Set:      in.Set,
			Exporter: jumpstarterv1alpha1.Exporter{ObjectMeta: in.Exporter},
		})
	}
	return cases
}

// request builds the reconciler's request for the case: parameters merged and images
// resolved by the provisioner package, as in production.
func (c testCase) request(t testing.TB, p *Provisioner) *provisioner.Request {
	t.Helper()
	desc, err := p.Describe(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	req, err := provisioner.NewRequest(&c.Set, &c.Class, desc.DefaultImages)
	if err != nil {
		t.Fatalf("%s: NewRequest: %v", c.Name, err)
	}
	return req.ForExporter(&c.Exporter, c.Exporter.Name+"-config")
}

// baseRequest is a valid request with the given merged parameters and drivers, for tables.
func baseRequest(params string, drivers ...vtv1alpha1.DriverSpec) *provisioner.Request {
	return &provisioner.Request{
		Set: &vtv1alpha1.ExporterSet{
			ObjectMeta: metav1.ObjectMeta{Name: "pool", Namespace: "lab"},
			Spec: vtv1alpha1.ExporterSetSpec{
				VirtualTargetClassName: "qemu",
				Template:               vtv1alpha1.ExporterTemplate{Spec: vtv1alpha1.ExporterTemplateSpec{Drivers: drivers}},
			},
		},
		Class: &vtv1alpha1.VirtualTargetClass{
			ObjectMeta: metav1.ObjectMeta{Name: "qemu", Namespace: "lab"},
			Spec:       vtv1alpha1.VirtualTargetClassSpec{Provisioner: Name},
		},
		Parameters:       []byte(params),
		Images:           DefaultImages(),
		Exporter:         &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: "pool-abcde", Namespace: "lab"}},
		ConfigSecretName: "pool-abcde-config",
	}
}

// qemuDriver is a Qemu driver entry with the given JSON config ("" for none).
func qemuDriver(config string) vtv1alpha1.DriverSpec {
	d := vtv1alpha1.DriverSpec{Name: "qemu", Type: QemuDriverType}
	if config != "" {
		d.Config = &apiextensionsv1.JSON{Raw: []byte(config)}
	}
	return d
}

// container returns the named init or main container of pod, or nil.
func container(pod *corev1.Pod, name string) *corev1.Container {
	for _, list := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}
