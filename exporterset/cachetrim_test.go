package exporterset

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
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

// The cache keeps of an Exporter no set owns what makes it a free board: trimmed, a free
// board is still free and a leased or offline one still is not.
func TestTrimmedBoardKeepsWhatMakesItFree(t *testing.T) {
	board := func(leased, online bool) *jumpstarterv1alpha1.Exporter {
		cond := func(typ string, ok bool) metav1.Condition {
			s := metav1.ConditionFalse
			if ok {
				s = metav1.ConditionTrue
			}
			return metav1.Condition{Type: typ, Status: s, Reason: "Seen", Message: "Last seen less than 1 minute ago"}
		}
		e := &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", Labels: map[string]string{"board": "rpi4"}},
			Spec: jumpstarterv1alpha1.ExporterSpec{Enabled: ptr.To(true)},
			Status: jumpstarterv1alpha1.ExporterStatus{Endpoint: "grpc:443", ExporterStatusValue: jumpstarterv1alpha1.ExporterStatusAvailable,
				Devices:    []jumpstarterv1alpha1.Device{{Uuid: "d"}},
				Conditions: []metav1.Condition{cond(jumpstarterv1alpha1.ExporterConditionOnline, online), cond(jumpstarterv1alpha1.ExporterConditionRegistered, true)}}}
		if leased {
			e.Status.LeaseRef = &corev1.LocalObjectReference{Name: "l"}
			e.Status.ExporterStatusValue = jumpstarterv1alpha1.ExporterStatusLeaseReady
		}
		return e
	}
	for _, c := range []struct {
		name           string
		leased, online bool
	}{{"free", false, true}, {"leased", true, true}, {"offline", false, false}} {
		e := board(c.leased, c.online)
		got, err := trimUnrelatedExporter(e)
		if err != nil {
			t.Fatal(err)
		}
		trimmed := got.(*jumpstarterv1alpha1.Exporter)
		if want, have := pool.FreeBoard(e), pool.FreeBoard(trimmed); want != have {
			t.Errorf("%s board: free %v in full, %v trimmed", c.name, want, have)
		}
		if trimmed.Status.Devices != nil || trimmed.Status.Endpoint != "" {
			t.Errorf("%s board: trimmed copy keeps devices or endpoint", c.name)
		}
	}
}
