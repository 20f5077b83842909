package soak

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

func TestBookingProblems(t *testing.T) {
	now := time.Date(2026, 1, 1, 2, 0, 30, 0, time.UTC)
	set := vtv1alpha1.ExporterSet{ObjectMeta: metav1.ObjectMeta{Name: "x86", UID: "set-uid"}, Spec: vtv1alpha1.ExporterSetSpec{MaxReplicas: ptr.To[int32](3)}}
	lease := func(name string, begin time.Duration, assigned bool) jumpstarterv1alpha1.Lease {
		l := jumpstarterv1alpha1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: jumpstarterv1alpha1.LeaseSpec{Selector: metav1.LabelSelector{MatchLabels: map[string]string{"board": "x86"}},
				BeginTime: &metav1.Time{Time: now.Add(begin)}}}
		if assigned {
			l.Status.ExporterRef = &corev1.LocalObjectReference{Name: "e"}
		}
		return l
	}
	cases := []struct {
		name   string
		leases []jumpstarterv1alpha1.Lease
		want   []string // lease names reported
	}{
		{"begun, unassigned, within the ceiling", []jumpstarterv1alpha1.Lease{lease("b1", -10*time.Second, false)}, []string{"b1"}},
		{"not begun yet: waited for", []jumpstarterv1alpha1.Lease{lease("b1", 10*time.Second, false)}, []string{"b1"}},
		{"assigned", []jumpstarterv1alpha1.Lease{lease("b1", -10*time.Second, true)}, nil},
		{"beyond the ceiling: some wait", []jumpstarterv1alpha1.Lease{
			lease("a1", -time.Minute, true), lease("a2", -time.Minute, true), lease("b1", -10*time.Second, false), lease("b2", -10*time.Second, false),
		}, nil},
		{"at the ceiling: all must be served", []jumpstarterv1alpha1.Lease{
			lease("a1", -time.Minute, true), lease("b1", -10*time.Second, false), lease("b2", -10*time.Second, false),
		}, []string{"b1", "b2"}},
	}
	for _, c := range cases {
		got := bookingProblems(c.leases, []vtv1alpha1.ExporterSet{set}, nil, now, nil)
		if len(got) != len(c.want) {
			t.Errorf("%s: %q, want problems for %v", c.name, got, c.want)
			continue
		}
		for i, name := range c.want {
			if !strings.Contains(got[i], "booked lease "+name+" ") {
				t.Errorf("%s: %q does not name %s", c.name, got[i], name)
			}
		}
	}
	// A hand-disabled instance holds a place under the ceiling.
	disabled := jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: "d",
		OwnerReferences: []metav1.OwnerReference{{UID: "set-uid", Controller: ptr.To(true), Kind: "ExporterSet", Name: "x86"}}},
		Spec: jumpstarterv1alpha1.ExporterSpec{Enabled: ptr.To(false)}}
	leases := []jumpstarterv1alpha1.Lease{lease("a1", -time.Minute, true), lease("b1", -10*time.Second, false), lease("b2", -10*time.Second, false)}
	if got := bookingProblems(leases, []vtv1alpha1.ExporterSet{set}, []jumpstarterv1alpha1.Exporter{disabled}, now, nil); len(got) != 0 {
		t.Errorf("with a hand-disabled instance the ceiling leaves a booking waiting, got %q", got)
	}
}
