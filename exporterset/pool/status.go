package pool

import (
	corev1 "k8s.io/api/core/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// Counts are the status counters of a pool, computed from its instances by ComputeStatus.
// Each field is the status field of the same name (see ComputeStatus for the definitions).
type Counts struct {
	Replicas            int32
	ReadyReplicas       int32
	AvailableReplicas   int32
	FailingReplicas     int32
	RestingReplicas     int32
	LeasedReplicas      int32
	UnavailableReplicas int32
	ExportersActive     int32
	ExportersIdle       int32
	ExportersDisabled   int32
	ExportersOffline    int32
	PodsPending         int32
	PodsRunning         int32
	PodsFailed          int32
	PodsUnknown         int32
	// HardwareAvailableReplicas is not computed from the instances: the caller sets it to
	// the free boards counted toward the buffer (FreeBoards).
	HardwareAvailableReplicas int32
}

// Status returns a status holding c's counters, and nothing else (no conditions, selector
// or clocks): the counters part of what the reconciler writes.
func (c Counts) Status() vtv1alpha1.ExporterSetStatus {
	return vtv1alpha1.ExporterSetStatus{
		Replicas: c.Replicas, ReadyReplicas: c.ReadyReplicas, AvailableReplicas: c.AvailableReplicas,
		FailingReplicas: c.FailingReplicas, RestingReplicas: c.RestingReplicas, LeasedReplicas: c.LeasedReplicas, UnavailableReplicas: c.UnavailableReplicas,
		ExportersActive: c.ExportersActive, ExportersIdle: c.ExportersIdle, ExportersDisabled: c.ExportersDisabled,
		ExportersOffline: c.ExportersOffline, PodsPending: c.PodsPending, PodsRunning: c.PodsRunning,
		PodsFailed: c.PodsFailed, PodsUnknown: c.PodsUnknown, HardwareAvailableReplicas: c.HardwareAvailableReplicas,
	}
}

// ComputeStatus computes every counter of an ExporterSet's status from its instances (the
// owned Exporters with their Pods). It is pure: conditions, selector and the cooldown clock
// are left for the caller. Definitions:
//
//   - replicas: owned Exporters; readyReplicas: Online and Registered;
//   - availableReplicas: ready, enabled, unleased and not failing (the warm pool): an
//     exporter that registered while its target crash-loops serves nobody;
//   - failingReplicas: instances with a diagnosed Problem (problems, from diagnosis; nil
//     for none);
//   - leasedReplicas: status.leaseRef set; unavailableReplicas: enabled and not ready;
//   - restingReplicas: enabled, unleased, not being deleted, and no Pod at all: at rest,
//     waiting for a Lease to start its Pod;
//   - exportersActive: leased and online; exportersIdle: online, enabled, unleased;
//   - exportersDisabled: spec.enabled=false; exportersOffline: enabled, not online;
//   - podsPending/Running/Failed by phase of the instances' Pods; podsUnknown: Unknown or
//     Succeeded. A Pod whose Exporter is gone is no instance's and is not counted.
func ComputeStatus(instances []*Instance, problems Problems) Counts {
	var s Counts
	for _, in := range instances {
		s.Replicas++
		online, ready, enabled, leased := in.Online(), in.Ready(), in.Enabled(), in.Leased()
		if ready {
			s.ReadyReplicas++
		}
		failing := problems.Of(in) != nil
		if ready && enabled && !leased && !failing {
			s.AvailableReplicas++
		}
		if failing {
			s.FailingReplicas++
		}
		if leased {
			s.LeasedReplicas++
		}
		if enabled && !ready {
			s.UnavailableReplicas++
		}
		if enabled && !leased && !in.HasPod() && !in.Deleting() {
			s.RestingReplicas++
		}
		if leased && online {
			s.ExportersActive++
		}
		if online && enabled && !leased {
			s.ExportersIdle++
		}
		if !enabled {
			s.ExportersDisabled++
		}
		if enabled && !online {
			s.ExportersOffline++
		}
		for _, p := range in.Pods {
			switch p.Status.Phase {
			case corev1.PodPending, "":
				s.PodsPending++
			case corev1.PodRunning:
				s.PodsRunning++
			case corev1.PodFailed:
				s.PodsFailed++
			default: // Succeeded and Unknown: neither serving nor failed
				s.PodsUnknown++
			}
		}
	}
	return s
}
