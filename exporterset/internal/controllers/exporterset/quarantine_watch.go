package exporterset

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// hookSighting is an exporter's report of a failed lease hook, noted from the watch as it
// came: under onFailure endLease the report lasts about a second before the exporter
// reports Available again, and a pass that reads the cache after that would miss it.
type hookSighting struct {
	value   jumpstarterv1alpha1.ExporterStatusValue
	message string
}

// hookSightings is the set reconciler's handler of its Exporters' events that notes each
// failed lease hook (memory's sightings, per instance: the quarantine step reads and drops
// it) and queues the set. Only the report is noted; what it means is the pass's decision.
func (r *Reconciler) hookSightings() handler.EventHandler {
	note := func(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		e, ok := o.(*jumpstarterv1alpha1.Exporter)
		if !ok {
			return
		}
		in := &pool.Instance{Exporter: e}
		set := objects.SetOwnerOf(e)
		if set == "" || !in.HookFailed() || in.Quarantined() || in.Deleting() {
			return
		}
		key := types.NamespacedName{Namespace: e.Namespace, Name: set}
		r.memory.sightings.PutInstance(key.String(), e.UID, hookSighting{value: e.Status.ExporterStatusValue, message: e.Status.StatusMessage})
		q.Add(reconcile.Request{NamespacedName: key})
	}
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			note(e.Object, q)
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			note(e.ObjectNew, q)
		},
	}
}
