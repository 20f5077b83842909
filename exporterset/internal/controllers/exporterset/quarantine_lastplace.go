package exporterset

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/eventlog"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// The last place (pool/leasewait.go). The set's last enabled Exporter is not quarantined when
// it fails its check: disabled, it would make the Jumpstarter controller refuse every Lease
// for the set (AllDisabled) until a replacement exists, and a replacement is created only
// after the quarantine's disable (and not at all while the set backs off or at its ceiling).
// It stays enabled and its Pod is replaced instead, which gives the same fresh target a
// quarantine and its replacement would, under the same Exporter. Its failure counts towards
// the circuit breaker as a quarantine does.

// lastPlace reports whether disabling in would leave the set without an enabled Exporter
// that is not being deleted (those quarantined earlier in the pass are disabled already).
func lastPlace(obs *observation, in *pool.Instance, quarantined map[types.UID]bool) bool {
	for _, o := range obs.Instances {
		if o != in && !o.Deleting() && o.Enabled() && !quarantined[o.Exporter.UID] {
			return false
		}
	}
	return true
}

// renewInstead takes c's instance out of quarantine's way: its current Pod is replaced
// (renewals) and the failed check it reported is not acted on again until the exporter
// reports otherwise.
func (r *Reconciler) renewInstead(p *pass, c quarantineCase, f *instanceFailures) {
	f.renewing = true
	if pod := currentPod(c.in); pod != nil {
		f.renewPod = pod.UID
	}
	r.memory.sightings.DropInstance(keyOf(p.set), c.in.Exporter.UID)
	r.warning(p.set, c.in.Exporter, eventlog.InstanceQuarantined, "Quarantine",
		"instance %s failed its check: %s: %q; it is the set's last enabled Exporter, so it stays enabled for Leases to wait on and its Pod is replaced instead of quarantined", c.in.Name(), c.reason, c.message)
}

// renewals are the Problems that replace the Pods of instances renewed instead of
// quarantined, for as long as the Pod that failed is their current one.
func (r *Reconciler) renewals(p *pass, obs *observation) pool.Problems {
	var out pool.Problems
	for _, in := range obs.Instances {
		f, ok := r.memory.instFailures.ForInstance(keyOf(p.set), in.Exporter.UID)
		if !ok || f.renewPod == "" {
			continue
		}
		pod := currentPod(in)
		if pod == nil || pod.UID != f.renewPod {
			f.renewPod = "" // replaced
			continue
		}
		if out == nil {
			out = pool.Problems{}
		}
		out[in.Exporter.UID] = &pool.Problem{Reason: vtv1alpha1.ReasonReuseCheckFailing, Replace: true,
			Message: fmt.Sprintf("instance %s failed its check between leases; it is the last enabled Exporter, so its Pod %s is replaced instead of quarantined", in.Name(), pod.Name)}
	}
	return out
}
