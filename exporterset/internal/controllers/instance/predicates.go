package instance

import (
	"maps"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// instanceInputsChanged passes the Exporter events the instance reconciler acts on: a set's
// Exporter created with its credential, or updated in what building it depends on (its
// credential and endpoint, spec.enabled, its labels). Heartbeats and lease changes pass not:
// the set's pass decides what a lease changes and pokes the instance (the contract).
var instanceInputsChanged = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return hasCredential(e.Object) },
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, ok1 := e.ObjectOld.(*jumpstarterv1alpha1.Exporter)
		n, ok2 := e.ObjectNew.(*jumpstarterv1alpha1.Exporter)
		if !ok1 || !ok2 || !hasCredential(n) {
			return false
		}
		return credentialOf(n) != credentialOf(o) || n.IsEnabled() != o.IsEnabled() || !maps.Equal(n.Labels, o.Labels)
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// notCreated passes the instance reconciler's owned objects' updates and deletes, not
// their creates: it created them itself (the reconcile that did has them already), and the
// cache's first list is covered by the Exporters' own creates, which reconcile every
// instance. A third of its reconciles were such echoes and found nothing to do.
var notCreated = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return false },
}

// goneOnly passes an instance's Pod when it goes, not on its status updates: a Pod gone is
// started again, and a restart is the set pass's decision.
var goneOnly = predicate.And(notCreated, predicate.Funcs{
	UpdateFunc: func(event.UpdateEvent) bool { return false },
})

func hasCredential(o client.Object) bool {
	return o.GetLabels()[pool.LabelSet] != "" && credentialOf(o) != ""
}

// credentialOf is the Exporter's credential Secret and endpoint, "" until both are issued.
func credentialOf(o client.Object) string {
	e, ok := o.(*jumpstarterv1alpha1.Exporter)
	if !ok || e.Status.Credential == nil || e.Status.Credential.Name == "" || e.Status.Endpoint == "" {
		return ""
	}
	return e.Status.Credential.Name + "@" + e.Status.Endpoint
}
