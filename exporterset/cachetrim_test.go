package exporterset

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// Only an Exporter of no set is trimmed; managed fields go from all.
func TestTrimUnrelatedExporter(t *testing.T) {
	mk := func(labels map[string]string, owner *metav1.OwnerReference) *jumpstarterv1alpha1.Exporter {
		e := &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns", UID: "u", Labels: labels,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}},
			Spec:   jumpstarterv1alpha1.ExporterSpec{Enabled: ptr.To(true)},
			Status: jumpstarterv1alpha1.ExporterStatus{Endpoint: "grpc:443"}}
		if owner != nil {
			e.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		return e
	}
	upstream := &metav1.OwnerReference{Kind: "ExporterSet", Name: "s", UID: "s", Controller: ptr.To(true)}
	other := &metav1.OwnerReference{Kind: "Deployment", Name: "d", UID: "d", Controller: ptr.To(true)}
	cases := []struct {
		name string
		e    *jumpstarterv1alpha1.Exporter
		full bool
	}{
		{"ours, by the set label", mk(map[string]string{pool.LabelSet: "s"}, nil), true},
		{"upstream's, by its controller", mk(nil, upstream), true},
		{"a hardware exporter", mk(map[string]string{"board": "x86"}, nil), false},
		{"controlled by something else", mk(nil, other), false},
	}
	for _, c := range cases {
		got, err := trimUnrelatedExporter(c.e)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		e := got.(*jumpstarterv1alpha1.Exporter)
		if len(e.ManagedFields) != 0 {
			t.Errorf("%s: managed fields kept", c.name)
		}
		if full := e.Status.Endpoint != "" && e.Spec.Enabled != nil; full != c.full {
			t.Errorf("%s: spec and status kept %v, want %v", c.name, full, c.full)
		}
		if e.Name != "e" || e.UID != "u" || len(e.Labels) != len(c.e.Labels) || len(e.OwnerReferences) != len(c.e.OwnerReferences) {
			t.Errorf("%s: metadata lost: %+v", c.name, e.ObjectMeta)
		}
	}
}
