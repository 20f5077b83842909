package kubevirt

import (
	"k8s.io/apimachinery/pkg/api/resource"
)

// Parameter defaults. CPU and memory are small enough for a cloud image to boot and the
// kubeconfig key is the one `kubectl create secret generic --from-file=kubeconfig` writes.
const (
	defaultKubeconfigKey = "kubeconfig"
	defaultNamespace     = "default"
	defaultCores         = 1
	defaultMemory        = "2Gi"
	defaultSSHPort       = 22
	// maxCores bounds resources.cpu: KubeVirt accepts more, but a pool of exporters with
	// hundreds of cores each is a typo rather than a plan.
	maxCores = 512
)

// diskSource is where the VM's root disk comes from: exactly one of containerDisk and
// dataVolume.
type diskSource struct {
	// containerDisk is an image reference (a KubeVirt containerDisk): ephemeral, nothing to
	// clean up but the VM.
	containerDisk string
	// dataVolume is a disk imported by CDI into a PVC through the VM's dataVolumeTemplates.
	dataVolume *dataVolumeParams
}

// dataVolumeParams are the parameters of a DataVolume-backed disk.
type dataVolumeParams struct {
	// httpURL or registryURL (exactly one) is CDI's import source.
	httpURL, registryURL string
	// storage is the PVC size.
	storage resource.Quantity
	// storageClassName is empty for the remote cluster's default class.
	storageClassName string
}

// forward is a guest TCP port the exporter reaches through the port-forward sidecar.
type forward struct {
	// name is the forward's key, which is also the name of its TcpNetwork driver.
	name string
	// guestPort is the port in the VM; localPort is where the sidecar listens in the Pod.
	guestPort, localPort int32
}

// parameters are the decoded, defaulted and validated parameters of one request.
type parameters struct {
	kubeconfigKey string
	namespace     string
	disk          diskSource
	cores         uint32
	memory        resource.Quantity
	cloudInit     string
	// forwards are ssh (when enabled) then forwardPorts, sorted by name.
	forwards []forward
}

// localPortFor is where the sidecar listens for guestPort. Unprivileged ports are kept as they
// are, so "8080" is 8080 on both sides; privileged ones move up by 10000 (22 → 10022), since
// the sidecar runs as a non-root user with every capability dropped and cannot bind below
// 1024.
func localPortFor(guestPort int32) int32 {
	if guestPort < 1024 {
		return guestPort + 10000
	}
	return guestPort
}
