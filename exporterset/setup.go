package exporterset

import (
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/controllers/capacitybudget"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
)

// CacheOptions returns the cache settings the reconciler needs, for the manager's
// Options.Cache: Pods and Secrets are cached only when they carry LabelSet, so memory grows
// with the pools, not with the cluster; Leases only while they have not ended (ended ones
// accumulate and add no demand). Exporters are cached whole: the ones upstream's controller
// made carry no label of ours, and a set must count them; a namespace holds far fewer
// Exporters than Pods or Secrets. Namespaces, if any, restrict every cache.
func CacheOptions(namespaces ...string) cache.Options {
	o := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}:                {Label: objects.LabelledForASet()},
		&corev1.Secret{}:             {Label: objects.LabelledForASet()},
		&jumpstarterv1alpha1.Lease{}: {Label: objects.NotEndedLeases()},
		// Not label-restricted: a pool taken over from upstream carries none of our labels.
		&jumpstarterv1alpha1.Exporter{}: {Transform: trimUnrelatedExporter},
	}, DefaultTransform: stripManagedFields}
	if len(namespaces) > 0 {
		o.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			o.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return o
}

// InstanceManagerSuffix ends the field manager name the instance controller writes with
// (the set controller writes with the reconciler's name alone).
const InstanceManagerSuffix = "-instance"

// pokeBuffer is how many pokes wait for their controller's queue before a sender waits: the
// sources drain them continuously, so it only smooths a pass that pokes a whole pool.
const pokeBuffer = 1024

// SetupWithManager registers the controllers, each a package of its own that imports no
// other: the instance controller (internal/controllers/instance, the only writer of an
// instance's config Secret and Pods), the CapacityBudget controller when budgets are served
// (internal/controllers/capacitybudget), and the set controller
// (internal/controllers/exporterset). The set controller's decisions reach the instance
// controller through the contract Board and a channel of pokes, and its results come back
// the same way. The manager's cache should be configured with CacheOptions, and the
// reconciler's client be the manager's: the controllers list by the cache indexes
// registered here.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := r.set.SetupIndexes(mgr); err != nil {
		return err
	}
	name := r.opts.set.Name
	instancePokes, setPokes := make(chan event.GenericEvent, pokeBuffer), make(chan event.GenericEvent, pokeBuffer)
	// Each writes as its own field manager, so the API server's managedFields show which
	// controller wrote an object (the one-writer test reads them).
	r.instances.Client = client.WithFieldOwner(r.client, name+InstanceManagerSuffix)
	r.instances.PokeSet = r.set.Poke
	if err := r.instances.SetupWithManager(mgr, name+"-instance", instancePokes, r.opts.set.CreateParallelism); err != nil {
		return err
	}
	if r.opts.set.Budgets {
		b := &capacitybudget.Reconciler{
			Client: client.WithFieldOwner(r.client, name), Clock: r.opts.set.Clock, Metrics: r.opts.set.Metrics,
			Recorder: r.opts.set.Recorder, Sets: r.set.BudgetSet,
		}
		if r.opts.set.Gate != nil {
			b.Serves = r.set.ServesSet
		}
		if err := b.SetupWithManager(mgr, name+"-budget"); err != nil {
			return err
		}
	}
	return r.set.SetupWithManager(mgr, setPokes, instancePokes)
}
