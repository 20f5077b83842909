package ledger

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
)

func exporter(name, set, requests string) *jumpstarterv1alpha1.Exporter {
	e := &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{pool.LabelSet: set}}}
	if requests != "" {
		e.Annotations = map[string]string{AnnotationRequests: requests}
	}
	return e
}

// A reservation counts until its Exporter exists (then the Exporter counts instead) or its
// grace runs out; Exporters of ungoverned sets and unreadable requests count as nothing.
func TestUsageOf(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	cpu := func(s string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s)}
	}
	exporters := []*jumpstarterv1alpha1.Exporter{
		exporter("a-1", "a", `{"cpu":"2"}`),
		exporter("a-2", "a", `not json`),
		exporter("b-1", "b", `{"cpu":"1"}`),
		exporter("other-1", "other", `{"cpu":"8"}`),
	}
	res := func(name, set string, age time.Duration) vtv1alpha1.BudgetReservation {
		return vtv1alpha1.BudgetReservation{Exporter: name, Set: set, Since: metav1.NewTime(now.Add(-age)), Resources: cpu("2")}
	}
	reservations := []vtv1alpha1.BudgetReservation{
		res("a-1", "a", time.Second),                  // its Exporter exists: counted once, as the Exporter
		res("a-3", "a", time.Second),                  // pending
		res("a-4", "a", ReservationGrace),             // lapsed
		res("other-2", "other", time.Second),          // pending, in an ungoverned set: kept, not counted
		res("b-2", "b", ReservationGrace-time.Second), // pending, just inside its grace
	}
	u, live := UsageOf(exporters, map[string]bool{"a": true, "b": true}, reservations, now)
	if u.Instances != 5 {
		t.Errorf("instances %d, want 5 (a-1, a-2, b-1, a-3, b-2)", u.Instances)
	}
	if got, want := u.PerSet, map[string]int32{"a": 3, "b": 2}; !cmp.Equal(got, want) {
		t.Errorf("per set %v, want %v", got, want)
	}
	if got, want := u.Pending, map[string]int32{"a": 1, "b": 1}; !cmp.Equal(got, want) {
		t.Errorf("pending %v, want %v", got, want)
	}
	if q := u.Resources[corev1.ResourceCPU]; q.Cmp(resource.MustParse("7")) != 0 {
		t.Errorf("cpu %s, want 7 (2 + 1 + 2 + 2)", q.String())
	}
	var names []string
	for _, r := range live {
		names = append(names, r.Exporter)
	}
	if want := []string{"a-3", "other-2", "b-2"}; !cmp.Equal(names, want) {
		t.Errorf("live reservations %v, want %v", names, want)
	}
}

// An Exporter upstream's controller made carries no set label of ours: its controlling set
// names it.
func TestSetNameOfUpstreamExporter(t *testing.T) {
	e := &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: "x", OwnerReferences: []metav1.OwnerReference{{
		APIVersion: vtv1alpha1.GroupVersion.String(), Kind: "ExporterSet", Name: "up", UID: "u1", Controller: ptrTrue(),
	}}}}
	if got := SetNameOf(e); got != "up" {
		t.Errorf("SetNameOf = %q, want up", got)
	}
	e.OwnerReferences[0].Kind = "ReplicaSet"
	if got := SetNameOf(e); got != "" {
		t.Errorf("SetNameOf with a foreign owner = %q, want none", got)
	}
}

func ptrTrue() *bool { b := true; return &b }
