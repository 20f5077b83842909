package kubevirt

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubevirtv1 "kubevirt.io/api/core/v1"
	cdiv1 "kubevirt.io/containerized-data-importer-api/pkg/apis/core/v1beta1"

	"github.com/exporterset/exporterset/provisioner"
)

// Disk and volume names inside the VM spec.
const (
	rootDisk      = "root"
	cloudInitDisk = "cloudinit"
)

// buildVM returns the VirtualMachine of req.Exporter with parameters p: always running
// (runStrategy Always, so KubeVirt restarts a crashed guest and reports CrashLoopBackOff when
// it keeps failing), one root disk and, with cloudInit, a NoCloud disk. The pod network is
// KubeVirt's default masquerade binding; the exporter reaches the guest through the VMI's
// portforward subresource, so no Service is created.
func buildVM(req *provisioner.Request, p *parameters) *kubevirtv1.VirtualMachine {
	e := req.Exporter
	name := vmName(e)
	labels := setLabels(req.Set)
	labels[LabelInstance] = labelValue(e.Name)
	if e.UID != "" {
		labels[LabelInstanceUID] = string(e.UID)
	}
	vm := &kubevirtv1.VirtualMachine{
		TypeMeta: metav1.TypeMeta{APIVersion: kubevirtv1.GroupVersion.String(), Kind: "VirtualMachine"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: p.namespace, Labels: labels,
			Annotations: map[string]string{AnnotationSet: req.Set.Namespace + "/" + req.Set.Name, AnnotationInstance: e.Namespace + "/" + e.Name},
		},
	}
	runStrategy := kubevirtv1.RunStrategyAlways
	vm.Spec.RunStrategy = &runStrategy

	tmpl := &kubevirtv1.VirtualMachineInstanceTemplateSpec{
		// The VM's labels go on the VMI and its virt-launcher Pod too, so a person finds them
		// all by set or instance.
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
	}
	spec := &tmpl.Spec
	spec.Domain.CPU = &kubevirtv1.CPU{Cores: p.cores}
	spec.Domain.Memory = &kubevirtv1.Memory{Guest: &p.memory}
	spec.Domain.Devices.Disks = []kubevirtv1.Disk{{
		Name: rootDisk, DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: kubevirtv1.DiskBusVirtio}},
	}}
	spec.Networks = []kubevirtv1.Network{*kubevirtv1.DefaultPodNetwork()}
	spec.Domain.Devices.Interfaces = []kubevirtv1.Interface{*kubevirtv1.DefaultMasqueradeNetworkInterface()}

	root := kubevirtv1.Volume{Name: rootDisk}
	if dv := p.disk.dataVolume; dv != nil {
		dvName := dataVolumeName(name)
		root.DataVolume = &kubevirtv1.DataVolumeSource{Name: dvName}
		src := &cdiv1.DataVolumeSource{}
		if dv.httpURL != "" {
			src.HTTP = &cdiv1.DataVolumeSourceHTTP{URL: dv.httpURL}
		} else {
			url := dv.registryURL
			src.Registry = &cdiv1.DataVolumeSourceRegistry{URL: &url}
		}
		storage := &cdiv1.StorageSpec{
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: dv.storage}},
		}
		if dv.storageClassName != "" {
			sc := dv.storageClassName
			storage.StorageClassName = &sc
		}
		vm.Spec.DataVolumeTemplates = []kubevirtv1.DataVolumeTemplateSpec{{
			ObjectMeta: metav1.ObjectMeta{Name: dvName, Labels: labels},
			Spec:       cdiv1.DataVolumeSpec{Source: src, Storage: storage},
		}}
	} else {
		root.ContainerDisk = &kubevirtv1.ContainerDiskSource{Image: p.disk.containerDisk}
	}
	spec.Volumes = []kubevirtv1.Volume{root}

	if p.cloudInit != "" {
		spec.Domain.Devices.Disks = append(spec.Domain.Devices.Disks, kubevirtv1.Disk{
			Name: cloudInitDisk, DiskDevice: kubevirtv1.DiskDevice{Disk: &kubevirtv1.DiskTarget{Bus: kubevirtv1.DiskBusVirtio}},
		})
		spec.Volumes = append(spec.Volumes, kubevirtv1.Volume{
			Name:         cloudInitDisk,
			VolumeSource: kubevirtv1.VolumeSource{CloudInitNoCloud: &kubevirtv1.CloudInitNoCloudSource{UserData: p.cloudInit}},
		})
	}
	vm.Spec.Template = tmpl
	return vm
}
