package qemu

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/exporterset/exporterset/provisioner"
)

// The Pod layout upstream Jumpstarter's images expect.
const (
	// SharedDir is the emptyDir every container mounts: the launcher binary, its socket and
	// the QMP, serial and VNC sockets the QEMU driver creates (it works there when
	// launcher_socket is set).
	SharedDir = "/shared"
	// LauncherSocketPath is where target-runtime serves jumpstarter-exec, the channel the
	// exporter's QEMU driver runs qemu-img and QEMU through.
	LauncherSocketPath = SharedDir + "/launcher.sock"
	// DiskDir is the guest disk volume, mounted in the exporter (which flashes images) and
	// in target-runtime (where QEMU reads them).
	DiskDir = "/disk"

	// ExporterContainer runs `jmp run`; it is the Pod's only main container, so its exit
	// (after one lease under ExitAndReplace) completes the Pod.
	ExporterContainer = provisioner.ExporterContainerName
	// RuntimeContainer is the native sidecar running the QEMU runtime image.
	RuntimeContainer = "target-runtime"
	// LauncherInitContainer copies jumpstarter-exec from the exporter image to SharedDir.
	LauncherInitContainer = "copy-jumpstarter-exec"

	// RunAsUser is the UID and GID of every container: the exporter image's non-root user.
	// The runtime shares it, so files either side writes on /shared and /disk (flashed
	// images, sockets) are the other's to read and write without root or world-writable
	// modes.
	RunAsUser = provisioner.ExporterUID

	// AnnotationAccelerator on the Pod says how QEMU will run the guest: AcceleratorKVM or
	// AcceleratorTCG.
	AnnotationAccelerator = Name + "/accelerator"
	// AcceleratorKVM: the runtime and the exporter get /dev/kvm from a device plugin and the
	// guest arch is the node's.
	AcceleratorKVM = "kvm"
	// AcceleratorTCG: QEMU emulates the guest in software, much slower but anywhere.
	AcceleratorTCG = "tcg"

	// EnvLauncherSocket tells the exporter (and the runtime) where the launcher socket is.
	EnvLauncherSocket = "JUMPSTARTER_LAUNCHER_SOCKET"
)

const (
	sharedVolume = "shared"
	diskVolume   = "disk"
	// launcherInImage is where the exporter image installs jumpstarter-exec.
	launcherInImage = "/jumpstarter/bin/jumpstarter-exec"
	// envLogFields is read by jumpstarter-exec to tag its log lines, as upstream sets it.
	envLogFields = "JUMPSTARTER_EXEC_LOG_FIELDS"
	// configFileMode lets the shared group (fsGroup) read the config, nobody else.
	configFileMode int32 = 0o440
)

// sharedSizeLimit caps /shared, which holds only the launcher, sockets and firmware
// variable copies, so a runaway writer is evicted instead of filling the node's disk.
var sharedSizeLimit = resource.MustParse("256Mi")

// renderPod builds the instance Pod from a validated plan.
func (p *Provisioner) renderPod(req *provisioner.Request, pl *plan) *corev1.Pod {
	images := p.images(req.Images)
	sched := scheduling(req.Class)

	sharedMount := corev1.VolumeMount{Name: sharedVolume, MountPath: SharedDir}
	diskMount := corev1.VolumeMount{Name: diskVolume, MountPath: DiskDir}
	socketEnv := corev1.EnvVar{Name: EnvLauncherSocket, Value: LauncherSocketPath}

	runtimeEnv := []corev1.EnvVar{socketEnv}
	if e := req.Exporter; e != nil {
		runtimeEnv = append(runtimeEnv, corev1.EnvVar{
			Name: envLogFields, Value: fmt.Sprintf("component=exporter,exporter=%s,namespace=%s", e.Name, e.Namespace),
		})
	}

	launcher := corev1.Container{
		Name:            LauncherInitContainer,
		Image:           images.Exporter.Image,
		ImagePullPolicy: images.Exporter.PullPolicy,
		Command:         []string{"cp", launcherInImage, SharedDir + "/jumpstarter-exec"},
		VolumeMounts:    []corev1.VolumeMount{sharedMount},
		SecurityContext: containerSecurity(),
	}
	always := corev1.ContainerRestartPolicyAlways
	runtime := corev1.Container{
		Name:            RuntimeContainer,
		Image:           images.Runtime.Image,
		ImagePullPolicy: images.Runtime.PullPolicy,
		// A native sidecar: started before the exporter, stopped after it, so the Pod
		// completes when the exporter exits.
		RestartPolicy:   &always,
		Env:             runtimeEnv,
		EnvFrom:         credentials(req),
		Resources:       runtimeResources(sched.Resources, pl.params),
		VolumeMounts:    []corev1.VolumeMount{sharedMount, diskMount},
		SecurityContext: containerSecurity(),
	}

	sizeLimit := sharedSizeLimit.DeepCopy()
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{launcher, runtime},
		Volumes: []corev1.Volume{
			{Name: sharedVolume, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &sizeLimit}}},
			diskVolumeFor(pl.params),
		},
		NodeSelector:    maps.Clone(sched.NodeSelector),
		Tolerations:     cloneTolerations(sched.Tolerations),
		SecurityContext: podSecurity(),
		// The exporter talks to the Jumpstarter controller with the token in its config; no
		// container needs the Kubernetes API or the namespace's service environment.
		AutomountServiceAccountToken: ptr(false),
		EnableServiceLinks:           ptr(false),
	}}
	// The exporter is the Pod's only main container: its exit after one lease completes the
	// Pod (ExitAndReplace). It gets the resolved images, not the request's raw ones.
	withImages := *req
	withImages.Images = images
	exporter := provisioner.AddExporterContainer(pod, &withImages, provisioner.WithConfigFileMode(configFileMode))
	exporter.Env = []corev1.EnvVar{socketEnv}
	exporter.EnvFrom = credentials(req)
	exporter.Resources = exporterResources(pl.kvm)
	exporter.VolumeMounts = append([]corev1.VolumeMount{sharedMount, diskMount}, exporter.VolumeMounts...)
	pod.Annotations = map[string]string{AnnotationAccelerator: pl.accelerator(req.Class)}
	return pod
}

// images resolves each role once more against the defaults, so a request built without
// them (or with an empty role) still gets runnable images.
func (p *Provisioner) images(in provisioner.Images) provisioner.Images {
	return provisioner.Images{
		Exporter: provisioner.ImageOr(in.Exporter, p.defaults.Exporter),
		Runtime:  provisioner.ImageOr(in.Runtime, p.defaults.Runtime),
	}
}

// credentials hands every key of the class's credentials Secret to a container as an
// environment variable, by reference: the values never appear in the Pod spec.
func credentials(req *provisioner.Request) []corev1.EnvFromSource {
	if req.Class == nil || req.Class.Spec.CredentialsSecretRef == nil {
		return nil
	}
	return []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: req.Class.Spec.CredentialsSecretRef.Name},
	}}}
}

// runtimeResources are the class's resources, on the container that runs QEMU. With an
// emptyDir guest disk the ephemeral-storage request is raised to the disk's size, so the
// scheduler picks a node with room for it (the class's limit, if any, was checked to fit).
func runtimeResources(in *corev1.ResourceRequirements, params *parameters) corev1.ResourceRequirements {
	var out corev1.ResourceRequirements
	if in != nil {
		in.DeepCopyInto(&out)
	}
	if params.storageClassName != "" {
		return out
	}
	vol := params.volumeSize()
	if req, ok := out.Requests[corev1.ResourceEphemeralStorage]; ok && req.Cmp(vol) >= 0 {
		return out
	}
	if out.Requests == nil {
		out.Requests = corev1.ResourceList{}
	}
	out.Requests[corev1.ResourceEphemeralStorage] = vol
	return out
}

// exporterResources give the exporter /dev/kvm whenever the runtime has it, through the same
// device-plugin resource: upstream's Qemu driver adds -accel kvm only when the exporter's own
// process can open /dev/kvm, even though QEMU runs in the runtime container. Without it the
// guest runs under TCG on a KVM node. The device is shareable (KubeVirt's plugin advertises
// 1000 per node), so the second device the Pod now holds costs nothing real; see README.md.
func exporterResources(kvm corev1.ResourceName) corev1.ResourceRequirements {
	if kvm == "" {
		return corev1.ResourceRequirements{}
	}
	return corev1.ResourceRequirements{Limits: corev1.ResourceList{kvm: resource.MustParse("1")}}
}

// diskVolumeFor is the guest disk: a generic ephemeral volume of the storage class when one
// is given (created and deleted with the Pod), else an emptyDir of the same size.
func diskVolumeFor(params *parameters) corev1.Volume {
	size := params.volumeSize()
	if params.storageClassName == "" {
		return corev1.Volume{Name: diskVolume, VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &size},
		}}
	}
	fs := corev1.PersistentVolumeFilesystem
	return corev1.Volume{Name: diskVolume, VolumeSource: corev1.VolumeSource{
		Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes:      slices.Clone(params.accessModes),
				StorageClassName: ptr(params.storageClassName),
				VolumeMode:       &fs,
				Resources: corev1.VolumeResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceStorage: size},
				},
			},
		}},
	}}
}

// cloneTolerations deep-copies the class's tolerations.
func cloneTolerations(in []corev1.Toleration) []corev1.Toleration {
	if in == nil {
		return nil
	}
	out := make([]corev1.Toleration, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

// ptr returns a pointer to v.
func ptr[T any](v T) *T { return &v }
