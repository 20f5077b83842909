package instance

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// The instance reconciler wakes up when a set's Exporter gets its credential or changes in
// what building it depends on, not on every Exporter write (heartbeats, leases).
func TestInstanceInputsChangedPredicate(t *testing.T) {
	bare := &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: "e", Labels: map[string]string{pool.LabelSet: "pool"}}}
	issued := bare.DeepCopy()
	issued.Status.Credential = &corev1.LocalObjectReference{Name: "e-token"}
	issued.Status.Endpoint = "grpc:443"
	leased := issued.DeepCopy()
	leased.Status.LeaseRef = &corev1.LocalObjectReference{Name: "l"}
	foreign := issued.DeepCopy()
	foreign.Labels = nil
	disabled := issued.DeepCopy()
	disabled.Spec.Enabled = ptr.To(false)
	heartbeat := issued.DeepCopy()
	heartbeat.Status.LastSeen = metav1.Now()

	cases := []struct {
		name     string
		old, new *jumpstarterv1alpha1.Exporter
		want     bool
	}{
		{"credential issued", bare, issued, true},
		{"not yet", bare, bare, false},
		{"leased later", issued, leased, false},
		{"not a set's", bare, foreign, false},
		{"disabled", issued, disabled, true},
		{"heartbeat", issued, heartbeat, false},
	}
	for _, c := range cases {
		if got := instanceInputsChanged.Update(event.UpdateEvent{ObjectOld: c.old, ObjectNew: c.new}); got != c.want {
			t.Errorf("%s: update passes %v, want %v", c.name, got, c.want)
		}
	}
	if !instanceInputsChanged.Create(event.CreateEvent{Object: issued}) || instanceInputsChanged.Create(event.CreateEvent{Object: bare}) {
		t.Error("create: want only credentialed Exporters")
	}
}
