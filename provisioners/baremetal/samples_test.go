package baremetal

import (
	"bytes"
	"context"
	"os"
	"testing"

	"sigs.k8s.io/yaml"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// The lab sample (config/samples/lab) is a class this provisioner accepts, with the set that
// uses it.
func TestLabSampleIsValid(t *testing.T) {
	raw, err := os.ReadFile("../../config/samples/lab/lab-hosts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var class vtv1alpha1.VirtualTargetClass
	var set vtv1alpha1.ExporterSet
	for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			t.Fatal(err)
		}
		switch meta.Kind {
		case "VirtualTargetClass":
			err = yaml.UnmarshalStrict(doc, &class)
		case "ExporterSet":
			err = yaml.UnmarshalStrict(doc, &set)
		}
		if err != nil {
			t.Fatalf("%s: %v", meta.Kind, err)
		}
	}
	if class.Spec.Provisioner != ProvisionerName || set.Spec.VirtualTargetClassName != class.Name {
		t.Fatalf("the sample's class %q (provisioner %q) is not its set's (%q)", class.Name, class.Spec.Provisioner, set.Spec.VirtualTargetClassName)
	}
	set.Namespace, class.Namespace = "lab", "lab"
	req, err := provisioner.NewRequest(&set, &class, provisioner.Images{})
	if err != nil {
		t.Fatal(err)
	}
	if err := New().Validate(context.Background(), req); err != nil {
		t.Errorf("the lab sample is refused: %v", err)
	}
}
