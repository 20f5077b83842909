// Package objects holds what the controllers share about the objects they watch, so that
// none of them imports another for it.
package objects

import (
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// ExporterChanged drops Exporter updates that change nothing a controller reads: the
// Jumpstarter controller refreshes status.lastSeen of every online exporter all the time, and
// a reconcile of the whole set per heartbeat would cost a pass per exporter per interval.
func ExporterChanged() predicate.Predicate { return exporterChanged }

var exporterChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*jumpstarterv1alpha1.Exporter)
		n, ok2 := e.ObjectNew.(*jumpstarterv1alpha1.Exporter)
		if !ok1 || !ok2 {
			return true
		}
		return !apiequality.Semantic.DeepEqual(Relevant(o), Relevant(n))
	},
}

// Relevant is the part of an Exporter the controllers' decisions depend on.
func Relevant(e *jumpstarterv1alpha1.Exporter) *jumpstarterv1alpha1.Exporter {
	c := &jumpstarterv1alpha1.Exporter{}
	c.Labels, c.Annotations, c.DeletionTimestamp, c.OwnerReferences = e.Labels, e.Annotations, e.DeletionTimestamp, e.OwnerReferences
	c.Spec = e.Spec
	c.Status = e.Status
	c.Status.LastSeen = jumpstarterv1alpha1.ExporterStatus{}.LastSeen
	c.Status.Conditions = nil
	for _, cond := range e.Status.Conditions {
		// Heartbeats may rewrite a condition's message or time; its type and status matter.
		c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: cond.Type, Status: cond.Status})
	}
	return c
}
