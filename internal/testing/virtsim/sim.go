package virtsim

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Failure is a failure the simulator can put a VM in, named by the printable status KubeVirt
// reports for it.
type Failure string

const (
	// FailUnschedulable: the virt-launcher Pod cannot be scheduled. KubeVirt reports
	// printableStatus ErrorUnschedulable and copies the Pod's PodScheduled condition (reason
	// Unschedulable, the scheduler's message) to the VMI and the VM.
	FailUnschedulable Failure = Failure(kubevirtv1.VirtualMachineStatusUnschedulable)
	// FailCrashLoop: the VMI keeps failing. KubeVirt reports printableStatus
	// CrashLoopBackOff and records status.startFailure.
	FailCrashLoop Failure = Failure(kubevirtv1.VirtualMachineStatusCrashLoopBackOff)
)

// UnschedulableMessage is the scheduler's message the simulator reports for
// FailUnschedulable, in the kube-scheduler's own wording.
const UnschedulableMessage = "0/3 nodes are available: 3 Insufficient devices.kubevirt.io/kvm. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."

// Sim is a simulated virt-controller: Step moves every VM one step along KubeVirt's start
// sequence (VMI created Pending, then Scheduled, then Running and Ready), writing the status
// fields KubeVirt writes. It polls (Run) rather than watching, which keeps it small; tests
// that need determinism call Step themselves.
type Sim struct {
	c client.Client

	mu       sync.Mutex
	failures map[types.NamespacedName]Failure
}

// New returns a Sim that works through c, a client of the remote cluster.
func New(c client.Client) *Sim {
	return &Sim{c: c, failures: map[types.NamespacedName]Failure{}}
}

// Fail makes the VM ref fail as f from the next Step on.
func (s *Sim) Fail(ref types.NamespacedName, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[ref] = f
}

// Run calls Step every interval until ctx ends, ignoring errors (the next pass retries, as a
// controller's requeue would).
func (s *Sim) Run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = s.Step(ctx)
		}
	}
}

// Step moves every VM one step.
func (s *Sim) Step(ctx context.Context) error {
	var vms kubevirtv1.VirtualMachineList
	if err := s.c.List(ctx, &vms); err != nil {
		return err
	}
	for i := range vms.Items {
		if err := s.step(ctx, &vms.Items[i]); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("VM %s/%s: %w", vms.Items[i].Namespace, vms.Items[i].Name, err)
		}
	}
	return nil
}

func (s *Sim) step(ctx context.Context, vm *kubevirtv1.VirtualMachine) error {
	if vm.DeletionTimestamp != nil {
		return nil
	}
	ref := types.NamespacedName{Namespace: vm.Namespace, Name: vm.Name}
	s.mu.Lock()
	failure := s.failures[ref]
	s.mu.Unlock()

	vmi := &kubevirtv1.VirtualMachineInstance{}
	err := s.c.Get(ctx, ref, vmi)
	switch {
	case apierrors.IsNotFound(err):
		return s.createVMI(ctx, vm)
	case err != nil:
		return err
	}
	now := metav1.Now()
	switch {
	case failure == FailUnschedulable:
		cond := kubevirtv1.VirtualMachineInstanceCondition{
			Type: kubevirtv1.VirtualMachineInstanceConditionType(corev1.PodScheduled), Status: corev1.ConditionFalse,
			Reason: "Unschedulable", Message: UnschedulableMessage, LastTransitionTime: now,
		}
		vmi.Status.Phase = kubevirtv1.Scheduling
		vmi.Status.Conditions = []kubevirtv1.VirtualMachineInstanceCondition{cond}
		if err := s.c.Update(ctx, vmi); err != nil {
			return err
		}
		return s.setVMStatus(ctx, vm, kubevirtv1.VirtualMachineStatusUnschedulable, false, []kubevirtv1.VirtualMachineCondition{
			{Type: kubevirtv1.VirtualMachineReady, Status: corev1.ConditionFalse, Reason: "PodNotExists", Message: "virt-launcher pod has not yet been scheduled", LastTransitionTime: now},
			{Type: kubevirtv1.VirtualMachineConditionType(corev1.PodScheduled), Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: UnschedulableMessage, LastTransitionTime: now},
		}, nil)
	case failure == FailCrashLoop:
		vmi.Status.Phase = kubevirtv1.Failed
		vmi.Status.Conditions = nil
		if err := s.c.Update(ctx, vmi); err != nil {
			return err
		}
		retry := metav1.NewTime(now.Add(time.Minute))
		return s.setVMStatus(ctx, vm, kubevirtv1.VirtualMachineStatusCrashLoopBackOff, false, []kubevirtv1.VirtualMachineCondition{
			{Type: kubevirtv1.VirtualMachineReady, Status: corev1.ConditionFalse, Reason: "VMINotExists", Message: "VMI does not exist", LastTransitionTime: now},
		}, &kubevirtv1.VirtualMachineStartFailure{ConsecutiveFailCount: 3, LastFailedVMIUID: vmi.UID, RetryAfterTimestamp: &retry})
	}

	switch vmi.Status.Phase {
	case "", kubevirtv1.Pending, kubevirtv1.Scheduling:
		vmi.Status.Phase = kubevirtv1.Scheduled
		vmi.Status.Conditions = []kubevirtv1.VirtualMachineInstanceCondition{{
			Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionFalse, Reason: "GuestNotRunning", Message: "Guest VM is not reported as running", LastTransitionTime: now,
		}}
		if err := s.c.Update(ctx, vmi); err != nil {
			return err
		}
		return s.setVMStatus(ctx, vm, kubevirtv1.VirtualMachineStatusStarting, false, vmConditions(vmi), nil)
	case kubevirtv1.Scheduled:
		vmi.Status.Phase = kubevirtv1.Running
		vmi.Status.Conditions = []kubevirtv1.VirtualMachineInstanceCondition{{
			Type: kubevirtv1.VirtualMachineInstanceReady, Status: corev1.ConditionTrue, LastTransitionTime: now,
		}}
		if err := s.c.Update(ctx, vmi); err != nil {
			return err
		}
		return s.setVMStatus(ctx, vm, kubevirtv1.VirtualMachineStatusRunning, true, vmConditions(vmi), nil)
	}
	return nil
}

// createVMI creates the VM's VMI from its template, owned by the VM as KubeVirt's is, and
// reports the VM Starting.
func (s *Sim) createVMI(ctx context.Context, vm *kubevirtv1.VirtualMachine) error {
	vmi := &kubevirtv1.VirtualMachineInstance{ObjectMeta: metav1.ObjectMeta{
		Name: vm.Name, Namespace: vm.Namespace, Labels: vm.Spec.Template.ObjectMeta.Labels,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(vm, kubevirtv1.VirtualMachineGroupVersionKind)},
	}}
	vm.Spec.Template.Spec.DeepCopyInto(&vmi.Spec)
	vmi.Status.Phase = kubevirtv1.Pending
	if err := s.c.Create(ctx, vmi); err != nil {
		return err
	}
	return s.setVMStatus(ctx, vm, kubevirtv1.VirtualMachineStatusStarting, false, []kubevirtv1.VirtualMachineCondition{{
		Type: kubevirtv1.VirtualMachineReady, Status: corev1.ConditionFalse, Reason: "PodNotExists", Message: "virt-launcher pod has not yet been scheduled", LastTransitionTime: metav1.Now(),
	}}, nil)
}

// vmConditions mirrors the VMI's conditions on the VM, as KubeVirt's VM controller does.
func vmConditions(vmi *kubevirtv1.VirtualMachineInstance) []kubevirtv1.VirtualMachineCondition {
	out := make([]kubevirtv1.VirtualMachineCondition, 0, len(vmi.Status.Conditions))
	for _, c := range vmi.Status.Conditions {
		out = append(out, kubevirtv1.VirtualMachineCondition{
			Type: kubevirtv1.VirtualMachineConditionType(c.Type), Status: c.Status, Reason: c.Reason, Message: c.Message, LastTransitionTime: c.LastTransitionTime,
		})
	}
	return out
}

// setVMStatus writes the VM's status through the status subresource.
func (s *Sim) setVMStatus(ctx context.Context, vm *kubevirtv1.VirtualMachine, ps kubevirtv1.VirtualMachinePrintableStatus, ready bool,
	conds []kubevirtv1.VirtualMachineCondition, failure *kubevirtv1.VirtualMachineStartFailure) error {
	vm.Status.Created = true
	vm.Status.Ready = ready
	vm.Status.PrintableStatus = ps
	vm.Status.Conditions = conds
	vm.Status.StartFailure = failure
	return s.c.Status().Update(ctx, vm)
}
