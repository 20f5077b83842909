package instance

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/contract"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// An instance has a unit once one was recorded, unless the pass asks for a new one having
// seen that very unit gone; a start asked on an older record is not made again.
func TestWithUnitTellsWhetherTheInstanceHasItsUnit(t *testing.T) {
	const rec, older = "2026-12-07T10:00:00Z", "2026-12-07T09:00:00Z"
	for _, tc := range []struct {
		name   string
		record string
		it     contract.Intent
		want   bool
	}{
		{"never made", "", contract.Intent{}, false},
		{"never made, start asked", "", contract.Intent{Start: true}, false},
		{"made", rec, contract.Intent{}, true},
		{"made, the pass saw it gone", rec, contract.Intent{Start: true, SeenRecord: rec}, false},
		{"made again since the pass looked", rec, contract.Intent{Start: true, SeenRecord: older}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: "i", UID: "u", Annotations: map[string]string{}}}
			if tc.record != "" {
				e.Annotations[objects.AnnotationExternalRecorded] = tc.record
			}
			in := &pool.Instance{Exporter: e}
			withUnit(in, tc.it)
			if in.HasPod() != tc.want {
				t.Fatalf("has its unit %v, want %v", in.HasPod(), tc.want)
			}
			if tc.want && in.Pods[0].UID != objects.UnitUID(e) {
				t.Errorf("unit UID %q, want %q", in.Pods[0].UID, objects.UnitUID(e))
			}
		})
	}
}
