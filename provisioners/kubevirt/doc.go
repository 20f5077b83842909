// Package kubevirt is the kubevirt.jumpstarter.dev provisioner: each instance is a KubeVirt
// VirtualMachine on a remote KubeVirt (or OpenShift Virtualization) cluster, and a
// lightweight exporter Pod in the management cluster that reaches the VM's ports through a
// `virtctl port-forward` sidecar, authenticated by the kubeconfig in the class's credentials
// Secret.
//
// It implements provisioner.ExternalProvisioner: CreateExternal creates the VM (idempotent,
// named from the Exporter's namespace, name and UID), ObserveExternal maps KubeVirt's status
// to Pending, Ready, Failed or Gone, InventoryExternal lists a set's VMs by label, and Cleanup
// deletes the VM and its DataVolume unless the class's reclaimPolicy is Retain. The remote
// cluster's kubeconfig reaches the provisioner only as Request.Credentials.
//
// See README.md for the parameters, the drivers it configures and where its test world's
// KubeVirt CRDs come from.
package kubevirt
