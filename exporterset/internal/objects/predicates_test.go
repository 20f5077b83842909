package objects

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// A heartbeat (lastSeen, a condition's message and time) is no change; a label, the
// enabled flag or a condition's status is.
func TestExporterChanged(t *testing.T) {
	base := func() *jumpstarterv1alpha1.Exporter {
		e := &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: "e", Labels: map[string]string{"a": "1"}}}
		e.Status.Conditions = []metav1.Condition{{Type: "Online", Status: metav1.ConditionTrue, Message: "seen", LastTransitionTime: metav1.NewTime(time.Unix(1, 0))}}
		return e
	}
	cases := []struct {
		name string
		edit func(*jumpstarterv1alpha1.Exporter)
		want bool
	}{
		{"heartbeat", func(e *jumpstarterv1alpha1.Exporter) {
			e.Status.LastSeen = metav1.NewTime(time.Unix(100, 0))
			e.Status.Conditions[0].Message, e.Status.Conditions[0].LastTransitionTime = "seen again", metav1.NewTime(time.Unix(100, 0))
		}, false},
		{"label", func(e *jumpstarterv1alpha1.Exporter) { e.Labels["a"] = "2" }, true},
		{"condition status", func(e *jumpstarterv1alpha1.Exporter) { e.Status.Conditions[0].Status = metav1.ConditionFalse }, true},
		{"disabled", func(e *jumpstarterv1alpha1.Exporter) { off := false; e.Spec.Enabled = &off }, true},
	}
	for _, tc := range cases {
		n := base()
		tc.edit(n)
		if got := ExporterChanged().Update(event.UpdateEvent{ObjectOld: base(), ObjectNew: n}); got != tc.want {
			t.Errorf("%s: changed = %v, want %v", tc.name, got, tc.want)
		}
	}
}
