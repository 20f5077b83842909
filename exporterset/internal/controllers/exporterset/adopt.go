package exporterset

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// Pools that upstream Jumpstarter's exporter-set controller built are taken over as they
// stand (README, "Replacing upstream's exporter-set controller"). Its Exporters carry the
// template's labels only, none of ours, and a controller owner reference to the set: they are
// instances of the set by that reference (setIndex indexes the owner, not only LabelSet).
// Without our spec-hash label they count as outdated, so the roll (roll.go) replaces the
// idle ones by surge, and a leased one only once its lease is over. Its Pods and config
// Secrets carry objects.UpstreamLabelSet instead of LabelSet and are outside the label-restricted
// caches; while a set has such instances, their Pods are read uncached, so that status and
// diagnosis see them. Nothing is written to a foreign instance but its retirement.

// observeForeign attaches their Pods to the set's foreign instances, read through the
// uncached reader by upstream's label: those Pods are not in the cache.
func (r *Reconciler) observeForeign(ctx context.Context, set *vtv1alpha1.ExporterSet, obs *observation) error {
	byUID := map[types.UID]*pool.Instance{}
	for _, list := range [][]*pool.Instance{obs.Instances, obs.Strays} {
		for _, in := range list {
			if in.Foreign() {
				byUID[in.Exporter.UID] = in
			}
		}
	}
	if len(byUID) == 0 {
		return nil
	}
	var pods corev1.PodList
	if err := r.apiReader.List(ctx, &pods, client.InNamespace(set.Namespace), client.MatchingLabels{objects.UpstreamLabelSet: set.Name}); err != nil {
		return fmt.Errorf("listing pods of upstream-made instances: %w", err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		ref := metav1.GetControllerOf(p)
		if ref == nil || ref.Kind != "Exporter" {
			continue
		}
		if in := byUID[ref.UID]; in != nil && p.Labels[pool.LabelSet] == "" {
			in.Pods = append(in.Pods, p)
		}
	}
	return nil
}
