// Package virtsim is the remote KubeVirt cluster of the kubevirt provisioner's tests: a
// second kube-apiserver with KubeVirt's VirtualMachine and VirtualMachineInstance CRDs, a
// small simulated virt-controller that moves VMs to Running with KubeVirt's real status
// fields (or into a failure on request), and a TCP proxy in front of the API server that can
// cut the connection like a network partition.
//
// The CRDs in crds/ were generated for these tests with controller-gen v0.23.0 from the Go
// types of kubevirt.io/api v1.6.0 (`controller-gen crd:allowDangerousTypes=true
// paths=kubevirt.io/api/core/v1`), keeping only the two kinds used. They are not KubeVirt's
// own install manifests, which virt-operator builds at run time: the schemas follow the same
// Go types, but no defaulting or validation webhook runs (the test API server has none), so
// what KubeVirt's webhooks would refuse is not tested here. controller-gen adds no status
// subresource for these types (they carry no kubebuilder markers); the status subresource was
// added to the VirtualMachine CRD by hand, as KubeVirt's operator installs it, and the
// VirtualMachineInstance CRD was left as generated, so the simulator writes a VMI's status
// with a plain update.
package virtsim

import (
	"path/filepath"
	"runtime"
)

// CRDDir is the directory of the KubeVirt CRDs, for testenv.WithCRDDirs.
func CRDDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "crds")
}
