package exporterset

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// Hosted instances (provisioner.HostedProvisioner, objects.UnitPod): the unit on a lab host
// is the instance's Pod. The pass observes the units (observeExternal), then shows each to
// the rest of the pass as the Pod it reads as, so diagnosis, the plan and the status
// counters need no rule of their own for them. The instance controller creates a unit where
// it would start a Pod, and removes it where it would delete one.

// withUnits is obs with each hosted instance's unit shown as its Pod (ext are the units'
// states). The instances are copies: what observe built is not changed after the fact.
func withUnits(obs *observation, ext externalStates) *observation {
	by := map[string]*pool.Instance{}
	for _, in := range obs.Instances {
		pod := objects.UnitPod(in.Exporter, ext.of(in))
		if pod == nil && len(in.Pods) == 0 {
			continue
		}
		c := *in
		c.Pods = nil // a hosted instance has no Pod of its own; one left from another provisioner is not its unit
		if pod != nil {
			c.Pods = []*corev1.Pod{pod}
		}
		by[in.Name()] = &c
	}
	return obs.replacing(by)
}
