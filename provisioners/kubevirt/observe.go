package kubevirt

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kubevirtv1 "kubevirt.io/api/core/v1"

	"github.com/exporterset/exporterset/provisioner"
)

// failedStatuses are the printable statuses KubeVirt reports for a VM that will not run
// without a person (or the remote cluster) changing something: reported as ExternalFailed
// with the status as the reason, so the set's conditions read as `kubectl get vm` does.
var failedStatuses = map[kubevirtv1.VirtualMachinePrintableStatus]bool{
	kubevirtv1.VirtualMachineStatusUnschedulable:    true,
	kubevirtv1.VirtualMachineStatusErrImagePull:     true,
	kubevirtv1.VirtualMachineStatusImagePullBackOff: true,
	kubevirtv1.VirtualMachineStatusPvcNotFound:      true,
	kubevirtv1.VirtualMachineStatusDataVolumeError:  true,
	kubevirtv1.VirtualMachineStatusCrashLoopBackOff: true,
	// The VMI's node stopped reporting: the guest may be gone.
	kubevirtv1.VirtualMachineStatusUnknown: true,
}

// ObserveExternal reads the instance's VM and VMI and maps their status to an
// ExternalState: Gone when there is no VM, Ready when it runs and KubeVirt reports it Ready,
// Failed for the printable statuses of failedStatuses or a Failure condition, Pending
// otherwise. A remote cluster that cannot be reached is a transient error.
func (p *Provisioner) ObserveExternal(ctx context.Context, req *provisioner.Request) (provisioner.ExternalState, error) {
	pl, cl, err := p.remote(req)
	if err != nil {
		return provisioner.ExternalState{}, err
	}
	if req.Exporter == nil {
		return provisioner.ExternalState{}, provisioner.Errorf("kubevirt: ObserveExternal needs the Exporter")
	}
	ref := vmRef(req.Exporter, pl.params.namespace)
	vm := &kubevirtv1.VirtualMachine{}
	if err := cl.Get(ctx, ref, vm); err != nil {
		if apierrors.IsNotFound(err) {
			return provisioner.ExternalState{Phase: provisioner.ExternalGone, Reason: "NotFound",
				Message: fmt.Sprintf("VirtualMachine %s does not exist", ref)}, nil
		}
		return provisioner.ExternalState{}, provisioner.Transient(fmt.Errorf("kubevirt: reading VirtualMachine %s: %w", ref, err))
	}
	vmi := &kubevirtv1.VirtualMachineInstance{}
	if err := cl.Get(ctx, ref, vmi); err != nil {
		if !apierrors.IsNotFound(err) {
			return provisioner.ExternalState{}, provisioner.Transient(fmt.Errorf("kubevirt: reading VirtualMachineInstance %s: %w", ref, err))
		}
		vmi = nil
	}
	return stateOf(vm, vmi), nil
}

// stateOf maps a VM and its VMI (nil when there is none) to an ExternalState.
func stateOf(vm *kubevirtv1.VirtualMachine, vmi *kubevirtv1.VirtualMachineInstance) provisioner.ExternalState {
	status := vm.Status.PrintableStatus
	if vm.DeletionTimestamp != nil {
		return provisioner.ExternalState{Phase: provisioner.ExternalPending, Reason: string(kubevirtv1.VirtualMachineStatusTerminating),
			Message: "the VirtualMachine is being deleted"}
	}
	if c := vmCondition(vm, kubevirtv1.VirtualMachineFailure); c != nil && c.Status == corev1.ConditionTrue {
		return provisioner.ExternalState{Phase: provisioner.ExternalFailed, Reason: orDefault(c.Reason, "Failure"), Message: c.Message}
	}
	if failedStatuses[status] {
		return provisioner.ExternalState{Phase: provisioner.ExternalFailed, Reason: string(status), Message: failureMessage(vm, vmi)}
	}
	ready := vmCondition(vm, kubevirtv1.VirtualMachineReady)
	if status == kubevirtv1.VirtualMachineStatusRunning && ready != nil && ready.Status == corev1.ConditionTrue &&
		vmi != nil && vmi.Status.Phase == kubevirtv1.Running {
		return provisioner.ExternalState{Phase: provisioner.ExternalReady}
	}
	st := provisioner.ExternalState{Phase: provisioner.ExternalPending, Reason: orDefault(string(status), "Creating")}
	switch {
	case ready != nil && ready.Status != corev1.ConditionTrue && ready.Message != "":
		st.Message = ready.Message
	case vmi != nil:
		st.Message = fmt.Sprintf("VirtualMachineInstance phase %s", orDefault(string(vmi.Status.Phase), "Pending"))
	}
	return st
}

// failureMessage quotes KubeVirt's explanation of a failed status: the VM's PodScheduled or
// Ready condition message (KubeVirt copies the VMI's and its Pod's there, e.g. the
// scheduler's "0/3 nodes are available: ..."), then the VMI's, and for CrashLoopBackOff the
// VM's startFailure record.
func failureMessage(vm *kubevirtv1.VirtualMachine, vmi *kubevirtv1.VirtualMachineInstance) string {
	for _, t := range []kubevirtv1.VirtualMachineConditionType{kubevirtv1.VirtualMachineConditionType(corev1.PodScheduled), kubevirtv1.VirtualMachineReady} {
		if c := vmCondition(vm, t); c != nil && c.Status != corev1.ConditionTrue && c.Message != "" {
			return c.Message
		}
	}
	if vmi != nil {
		for _, c := range vmi.Status.Conditions {
			if c.Status != corev1.ConditionTrue && c.Message != "" {
				return c.Message
			}
		}
	}
	if f := vm.Status.StartFailure; f != nil {
		msg := fmt.Sprintf("the VirtualMachineInstance failed %d times in a row", f.ConsecutiveFailCount)
		if f.RetryAfterTimestamp != nil {
			msg += "; KubeVirt retries after " + f.RetryAfterTimestamp.UTC().Format(time.RFC3339)
		}
		return msg
	}
	return ""
}

// vmCondition returns the VM's condition of type t, or nil.
func vmCondition(vm *kubevirtv1.VirtualMachine, t kubevirtv1.VirtualMachineConditionType) *kubevirtv1.VirtualMachineCondition {
	for i := range vm.Status.Conditions {
		if vm.Status.Conditions[i].Type == t {
			return &vm.Status.Conditions[i]
		}
	}
	return nil
}

// orDefault returns s, or def when s is empty.
func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
