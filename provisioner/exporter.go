package provisioner

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// Names and identity of the exporter container AddExporterContainer adds.
const (
	// ExporterContainerName names the container that runs `jmp run`.
	ExporterContainerName = "exporter"
	// ExporterConfigVolume names the Pod volume of the exporter config Secret.
	ExporterConfigVolume = "exporter-config"
	// ExporterUID is the UID and GID the exporter runs as: the exporter image's non-root
	// user.
	ExporterUID int64 = 65532
)

// ExporterOption changes what AddExporterContainer adds.
type ExporterOption func(*exporterOptions)

type exporterOptions struct {
	configFileMode *int32
}

// WithConfigFileMode sets the mode of the config file in its volume (the Secret volume's
// defaultMode). Kubernetes' default, 0644, lets every user of the container read the
// exporter's token; a Pod that sets fsGroup can use 0440, readable by that group only.
func WithConfigFileMode(mode int32) ExporterOption {
	return func(o *exporterOptions) { o.configFileMode = &mode }
}

// AddExporterContainer adds to pod what the reconciler expects of every instance Pod, so that
// a provisioner writes only its target:
//
//   - a container named ExporterContainerName running `jmp run --exporter-config
//     ExporterConfigPath`, with the image and pull policy of req.Images.Exporter and
//     RestrictedSecurityContext, inserted first in pod.Spec.Containers, so that kubectl
//     logs and exec pick it by default;
//   - the volume ExporterConfigVolume of the Secret req.ConfigSecretName (its
//     ExporterConfigFile key only), mounted read-only at ExporterConfigDir, appended to
//     pod.Spec.Volumes;
//   - restartPolicy Never: the exporter exits after its lease, which must complete the Pod
//     rather than restart it, and a failed Pod is replaced by the reconciler.
//
// It returns the added container for the caller to extend (environment, resources, more
// mounts). The pointer is into pod.Spec.Containers: it is valid until that slice changes.
func AddExporterContainer(pod *corev1.Pod, req *Request, opts ...ExporterOption) *corev1.Container {
	var o exporterOptions
	for _, opt := range opts {
		opt(&o)
	}
	pod.Spec.RestartPolicy = corev1.RestartPolicyNever
	pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
		Name: ExporterConfigVolume,
		VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName:  req.ConfigSecretName,
			Items:       []corev1.KeyToPath{{Key: ExporterConfigFile, Path: ExporterConfigFile}},
			DefaultMode: o.configFileMode,
		}},
	})
	pod.Spec.Containers = append([]corev1.Container{{
		Name:            ExporterContainerName,
		Image:           req.Images.Exporter.Image,
		ImagePullPolicy: req.Images.Exporter.PullPolicy,
		Command:         []string{"jmp", "run", "--exporter-config", ExporterConfigPath},
		VolumeMounts:    []corev1.VolumeMount{{Name: ExporterConfigVolume, MountPath: ExporterConfigDir, ReadOnly: true}},
		SecurityContext: RestrictedSecurityContext(),
	}}, pod.Spec.Containers...)
	return &pod.Spec.Containers[0]
}

// RestrictedSecurityContext is a container security context that meets the Pod Security
// Standards' restricted profile on its own, whatever the Pod says: non-root as ExporterUID,
// no privilege or privilege escalation, no capability, the runtime's default seccomp profile.
// The root filesystem stays writable: the exporter writes temporary files (its cache) outside
// its volumes. A new value each call, so that a caller may change its copy.
func RestrictedSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             ptr.To(true),
		RunAsUser:                ptr.To(ExporterUID),
		RunAsGroup:               ptr.To(ExporterUID),
		Privileged:               ptr.To(false),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}
