package exporterset

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
)

// The Exporter cache is not label-restricted (a pool taken over from upstream's controller
// has none of our labels), so it holds every Exporter of the watched namespaces. An
// Exporter of no set is kept as its metadata and what makes a board free (pool.FreeBoard:
// enabled, the types and statuses of its conditions, its lease, its exporterStatus): the
// reconcilers find instances by the set label or the ExporterSet controller reference,
// and read nothing else of the others.
// bench-scale's memory case, 20 000 unrelated Exporters: about 203 MiB resident in full,
// 107 MiB trimmed (docs/benchmarks.md). An update that makes an Exporter a set's arrives in
// full and replaces the trimmed copy.

// stripManagedFields drops managedFields from every cached object: nothing reads them from
// the cache, and an update that omits them leaves the API server's unchanged.
var stripManagedFields = cache.TransformStripManagedFields()

// trimUnrelatedExporter is the Exporter cache's transform.
func trimUnrelatedExporter(obj any) (any, error) {
	e, ok := obj.(*jumpstarterv1alpha1.Exporter)
	if !ok || objects.OfASet(e) {
		return stripManagedFields(obj)
	}
	var conds []metav1.Condition
	for _, c := range e.Status.Conditions {
		conds = append(conds, metav1.Condition{Type: c.Type, Status: c.Status})
	}
	return &jumpstarterv1alpha1.Exporter{TypeMeta: e.TypeMeta, ObjectMeta: metav1.ObjectMeta{
		Name: e.Name, Namespace: e.Namespace, UID: e.UID, ResourceVersion: e.ResourceVersion,
		Generation: e.Generation, CreationTimestamp: e.CreationTimestamp, DeletionTimestamp: e.DeletionTimestamp,
		Labels: e.Labels, OwnerReferences: e.OwnerReferences, Finalizers: e.Finalizers,
	}, Spec: jumpstarterv1alpha1.ExporterSpec{Enabled: e.Spec.Enabled}, Status: jumpstarterv1alpha1.ExporterStatus{
		Conditions: conds, LeaseRef: e.Status.LeaseRef, ExporterStatusValue: e.Status.ExporterStatusValue,
	}}, nil
}
