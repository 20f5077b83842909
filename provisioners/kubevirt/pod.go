package kubevirt

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"github.com/exporterset/exporterset/provisioner"
)

// Names and paths of the port-forward sidecar.
const (
	// ForwardContainer is the native sidecar (an init container with restartPolicy Always)
	// that runs `virtctl port-forward`: it starts before the exporter, is restarted by the
	// kubelet when it exits (the VM may not run yet when it starts, or the remote API may
	// drop the tunnel) and does not keep the Pod alive after the exporter exits.
	ForwardContainer = "port-forward"
	// KubeconfigVolume is the volume of the credentials Secret's kubeconfig key.
	KubeconfigVolume = "remote-kubeconfig"
	// KubeconfigDir is where the sidecar finds it; only the sidecar mounts it.
	KubeconfigDir  = "/etc/kubevirt-remote"
	kubeconfigFile = "kubeconfig"
)

// secretFileMode makes the exporter config and the kubeconfig readable by the Pod's fsGroup
// (the exporter's group) only, not by every user of the image.
const secretFileMode int32 = 0o440

// renderPod returns the exporter Pod. The exporter talks to the guest only through TcpNetwork
// drivers on the Pod's loopback; the sidecar carries those connections to the VM through the
// remote API server's VMI portforward subresource, authenticated by the class's kubeconfig.
// The exporter container never sees the kubeconfig.
func renderPod(req *provisioner.Request, pl *plan) *corev1.Pod {
	p := pl.params
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			FSGroup:        ptr.To(provisioner.ExporterUID),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		// Neither container talks to the management cluster's API.
		AutomountServiceAccountToken: ptr.To(false),
		EnableServiceLinks:           ptr.To(false),
	}}
	if s := req.Class.Spec.Scheduling; s != nil {
		s = s.DeepCopy() // the request is shared: the Pod must not alias it
		pod.Spec.NodeSelector = s.NodeSelector
		pod.Spec.Tolerations = s.Tolerations
	}
	exporter := provisioner.AddExporterContainer(pod, req, provisioner.WithConfigFileMode(secretFileMode))
	if s := req.Class.Spec.Scheduling; s != nil && s.Resources != nil {
		s.Resources.DeepCopyInto(&exporter.Resources)
	}
	if len(p.forwards) == 0 {
		return pod // nothing to reach: no sidecar, no kubeconfig in the Pod
	}

	ref := vmRef(req.Exporter, p.namespace)
	args := []string{
		"port-forward",
		"--kubeconfig=" + KubeconfigDir + "/" + kubeconfigFile,
		"--namespace=" + ref.Namespace,
		"--address=" + forwardHost,
		"vm/" + ref.Name,
	}
	for _, f := range p.forwards {
		args = append(args, fmt.Sprintf("%d:%d", f.localPort, f.guestPort))
	}
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
		Name: KubeconfigVolume,
		VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  pl.credentials,
			Items:       []corev1.KeyToPath{{Key: p.kubeconfigKey, Path: kubeconfigFile}},
			DefaultMode: ptr.To(secretFileMode),
		}},
	})
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{
		Name:            ForwardContainer,
		Image:           req.Images.Runtime.Image,
		ImagePullPolicy: req.Images.Runtime.PullPolicy,
		Command:         []string{"virtctl"},
		Args:            args,
		RestartPolicy:   ptr.To(corev1.ContainerRestartPolicyAlways),
		VolumeMounts:    []corev1.VolumeMount{{Name: KubeconfigVolume, MountPath: KubeconfigDir, ReadOnly: true}},
		SecurityContext: provisioner.RestrictedSecurityContext(),
		// A TCP relay: small, and bounded so a leak cannot starve the node.
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
		},
	})
	return pod
}
