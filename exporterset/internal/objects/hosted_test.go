package objects

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/provisioner"
)

func TestUnitPodReadsAsThePodOfItsState(t *testing.T) {
	rec := "2026-12-07T10:00:00.123456789Z"
	recorded := &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: "lab-a", Namespace: "ns", UID: "u1",
		Labels:      map[string]string{pool.LabelSet: "lab", pool.LabelSpecHash: "h1"},
		Annotations: map[string]string{AnnotationExternalRecorded: rec}}}
	bare := recorded.DeepCopy()
	bare.Annotations = nil
	state := func(p provisioner.ExternalPhase) *provisioner.ExternalState {
		return &provisioner.ExternalState{Phase: p, Reason: "R", Message: "m"}
	}
	for _, tc := range []struct {
		name  string
		e     *jumpstarterv1alpha1.Exporter
		st    *provisioner.ExternalState
		phase corev1.PodPhase // "" for no Pod
	}{
		{"nothing recorded", bare, state(provisioner.ExternalReady), ""},
		{"state unknown", recorded, nil, ""},
		{"gone", recorded, state(provisioner.ExternalGone), ""},
		{"pending", recorded, state(provisioner.ExternalPending), corev1.PodPending},
		{"ready", recorded, state(provisioner.ExternalReady), corev1.PodRunning},
		{"exited cleanly", recorded, state(provisioner.ExternalExited), corev1.PodSucceeded},
		{"failed", recorded, state(provisioner.ExternalFailed), corev1.PodFailed},
		{"a phase not known", recorded, state("Hibernating"), corev1.PodFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := UnitPod(tc.e, tc.st)
			if tc.phase == "" {
				if pod != nil {
					t.Fatalf("a Pod %s for no unit", pod.Status.Phase)
				}
				return
			}
			if pod == nil || pod.Status.Phase != tc.phase {
				t.Fatalf("Pod %v, want phase %s", pod, tc.phase)
			}
			if string(pod.UID) != "u1/"+rec || pod.Name != "lab-a" || pod.Labels[pool.LabelSpecHash] != "h1" || !IsControlledBy(pod, "u1") {
				t.Errorf("Pod identity %s %s %v %v", pod.UID, pod.Name, pod.Labels, pod.OwnerReferences)
			}
			if want, _ := time.Parse(time.RFC3339Nano, rec); !pod.CreationTimestamp.Time.Equal(want) {
				t.Errorf("created %v, want the record's %v", pod.CreationTimestamp, want)
			}
			inst := &pool.Instance{Exporter: tc.e, Pods: []*corev1.Pod{pod}}
			if got, want := inst.Terminal(), tc.phase == corev1.PodSucceeded || tc.phase == corev1.PodFailed; got != want {
				t.Errorf("Terminal %v, want %v", got, want)
			}
			if got, want := inst.Failed(), tc.phase == corev1.PodFailed; got != want {
				t.Errorf("Failed %v, want %v", got, want)
			}
		})
	}
	// A unit made again is another Pod.
	again := recorded.DeepCopy()
	again.Annotations[AnnotationExternalRecorded] = "2026-12-07T10:05:00Z"
	if UnitUID(again) == UnitUID(recorded) {
		t.Errorf("a unit made again has the UID of the one before")
	}
}
