package kubevirt

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// dataVolumeGVK is CDI's DataVolume. It is deleted as an unstructured object so that the
// provisioner does not need CDI's client types, and so that a cluster without CDI (no
// DataVolume kind) is simply a cluster with no DataVolume to delete.
var dataVolumeGVK = schema.GroupVersionKind{Group: "cdi.kubevirt.io", Version: "v1beta1", Kind: "DataVolume"}

// remote validates req and returns the plan and the remote cluster's client.
func (p *Provisioner) remote(req *provisioner.Request) (*plan, client.Client, error) {
	pl, err := newPlan(req)
	if err != nil {
		return nil, nil, err
	}
	cl, err := p.remotes.forRequest(req, pl.params.kubeconfigKey)
	if err != nil {
		return nil, nil, err
	}
	return pl, cl, nil
}

// CreateExternal creates the instance's VirtualMachine on the remote cluster, or finds it
// (the name derives from the Exporter's namespace, name and UID, so a retry or a restarted
// controller finds the VM it created). An existing VM is not updated: parameters changed
// since then apply to the instances created after, like a Pod's spec. It returns
// AnnotationVM.
func (p *Provisioner) CreateExternal(ctx context.Context, req *provisioner.Request) (map[string]string, error) {
	pl, cl, err := p.remote(req)
	if err != nil {
		return nil, err
	}
	if req.Exporter == nil {
		return nil, provisioner.Errorf("kubevirt: CreateExternal needs the Exporter")
	}
	vm := buildVM(req, pl.params)
	annotations := map[string]string{AnnotationVM: vm.Namespace + "/" + vm.Name}
	err = cl.Create(ctx, vm)
	switch {
	case err == nil, apierrors.IsAlreadyExists(err):
		return annotations, nil
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err), apierrors.IsForbidden(err), apierrors.IsNotFound(err):
		// The remote side refuses the VM (its validation webhook, RBAC, a missing namespace):
		// a person must fix the class or the remote cluster. Its message is quoted whole.
		return nil, provisioner.Invalid(fmt.Errorf("kubevirt: creating VirtualMachine %s/%s: %w", vm.Namespace, vm.Name, err))
	default:
		return nil, provisioner.Transient(fmt.Errorf("kubevirt: creating VirtualMachine %s/%s: %w", vm.Namespace, vm.Name, err))
	}
}

// Cleanup honours the class's reclaimPolicy for a retired instance. Retain keeps the VM (and
// its disk) for inspection; Delete, the default, deletes the VM and its DataVolume. KubeVirt
// also garbage-collects the DataVolume of a dataVolumeTemplate with its VM; deleting it here
// as well does not wait for the remote garbage collector. The provisioner creates no Service,
// so there is none to delete. An instance never created, or already gone, is nil.
func (p *Provisioner) Cleanup(ctx context.Context, req *provisioner.Request) error {
	pl, cl, err := p.remote(req)
	if err != nil {
		return err
	}
	if req.Exporter == nil {
		return nil // nothing names an instance
	}
	if req.Class.Spec.ReclaimPolicy == vtv1alpha1.ReclaimRetain {
		return nil
	}
	ref := vmRef(req.Exporter, pl.params.namespace)
	vm := &kubevirtv1.VirtualMachine{}
	vm.Namespace, vm.Name = ref.Namespace, ref.Name
	if err := cl.Delete(ctx, vm, client.PropagationPolicy("Background")); err != nil && !apierrors.IsNotFound(err) {
		return provisioner.Transient(fmt.Errorf("kubevirt: deleting VirtualMachine %s: %w", ref, err))
	}
	dv := &unstructured.Unstructured{}
	dv.SetGroupVersionKind(dataVolumeGVK)
	dv.SetNamespace(ref.Namespace)
	dv.SetName(dataVolumeName(ref.Name))
	if err := cl.Delete(ctx, dv, client.PropagationPolicy("Background")); err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
		return provisioner.Transient(fmt.Errorf("kubevirt: deleting DataVolume %s/%s: %w", ref.Namespace, dv.GetName(), err))
	}
	return nil
}

// InventoryExternal lists the VMs labelled with req.Set (its namespace, name and, when set,
// UID) in the VM namespace of the parameters.
func (p *Provisioner) InventoryExternal(ctx context.Context, req *provisioner.Request) ([]provisioner.ExternalResource, error) {
	pl, cl, err := p.remote(req)
	if err != nil {
		return nil, err
	}
	var list kubevirtv1.VirtualMachineList
	if err := cl.List(ctx, &list, client.InNamespace(pl.params.namespace), client.MatchingLabels(setLabels(req.Set))); err != nil {
		return nil, provisioner.Transient(fmt.Errorf("kubevirt: listing VirtualMachines in %s: %w", pl.params.namespace, err))
	}
	out := make([]provisioner.ExternalResource, 0, len(list.Items))
	for _, vm := range list.Items {
		instance := vm.Labels[LabelInstance]
		if _, name, ok := strings.Cut(vm.Annotations[AnnotationInstance], "/"); ok && name != "" {
			instance = name
		}
		out = append(out, provisioner.ExternalResource{
			Instance:    instance,
			InstanceUID: vm.Labels[LabelInstanceUID],
			Kind:        "VirtualMachine",
			Name:        vm.Namespace + "/" + vm.Name,
			Annotations: map[string]string{AnnotationVM: vm.Namespace + "/" + vm.Name},
		})
	}
	return out, nil
}
