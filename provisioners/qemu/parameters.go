package qemu

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Guest architectures, named as QEMU names them (qemu-system-<arch>), which is also what the
// QEMU driver's "arch" key takes.
const (
	// ArchX86_64 is a 64-bit x86 guest (the q35 machine); the default.
	ArchX86_64 = "x86_64"
	// ArchAarch64 is a 64-bit Arm guest (the virt machine).
	ArchAarch64 = "aarch64"
)

// Firmware choices of the "firmware" parameter.
const (
	// FirmwareUEFI boots the guest with EDK2 (OVMF on x86_64, AAVMF on aarch64).
	FirmwareUEFI = "uefi"
	// FirmwareBIOS boots an x86_64 guest with QEMU's built-in SeaBIOS.
	FirmwareBIOS = "bios"
)

// Parameter defaults. The CPU and memory defaults are the QEMU driver's own (smp 2, mem 512M),
// so a class without parameters behaves like the driver without config.
const (
	defaultArch       = ArchX86_64
	defaultFirmware   = FirmwareUEFI
	defaultCPU        = "2"
	defaultMemory     = "512Mi"
	defaultStorage    = "10Gi"
	defaultFSOverhead = "10%"
)

// archSpec is what the provisioner knows about one guest architecture.
type archSpec struct {
	// machineType is the only machine the QEMU driver emulates for the arch (it hard-codes
	// -machine q35 / virt), so it is the default and the only accepted "machineType".
	machineType string
	// maxCPUs bounds "resources.cpu": q35 without an interrupt-remapping IOMMU (which the
	// driver does not add) addresses 255 vCPUs; virt with its default GICv2 addresses 8.
	maxCPUs int64
	// firmware lists the accepted "firmware" values; aarch64 has no BIOS.
	firmware []string
	// nodeArch is the kubernetes.io/arch value of nodes whose KVM can run this arch.
	nodeArch string
	// uefiCode and uefiVars are the EDK2 images of the default runtime image, handed to the
	// driver as its OVMF_CODE.fd / OVMF_VARS.fd default partitions.
	uefiCode, uefiVars string
}

var arches = map[string]archSpec{
	ArchX86_64: {
		machineType: "q35", maxCPUs: 255, firmware: []string{FirmwareBIOS, FirmwareUEFI}, nodeArch: "amd64",
		uefiCode: "/usr/share/edk2/ovmf/OVMF_CODE.fd", uefiVars: "/usr/share/edk2/ovmf/OVMF_VARS.fd",
	},
	ArchAarch64: {
		machineType: "virt", maxCPUs: 8, firmware: []string{FirmwareUEFI}, nodeArch: "arm64",
		uefiCode: "/usr/share/AAVMF/AAVMF_CODE.fd", uefiVars: "/usr/share/AAVMF/AAVMF_VARS.fd",
	},
}

// archNames are the accepted "arch" values, sorted.
var archNames = []string{ArchAarch64, ArchX86_64}

// writableAccessModes are the accepted "storage.accessModes": the guest disk is written to,
// so ReadOnlyMany is refused.
var writableAccessModes = []corev1.PersistentVolumeAccessMode{
	corev1.ReadWriteOnce, corev1.ReadWriteOncePod, corev1.ReadWriteMany,
}

// parameters are the decoded, defaulted and validated parameters of one request.
type parameters struct {
	arch        string
	machineType string
	firmware    string
	// cpus is resources.cpu as a whole number, the driver's smp.
	cpus int64
	// memory is resources.memory in bytes, a whole number of MiB.
	memory int64
	// storage is resources.storage in bytes, a multiple of 512; storageSet says it was given,
	// since only then does the driver get a disk_size (see driverDefaults).
	storage    int64
	storageSet bool
	// storageClassName selects a generic ephemeral volume; empty means a sized emptyDir.
	storageClassName string
	accessModes      []corev1.PersistentVolumeAccessMode
	// fsOverheadPercent is added to storage to size the volume, for the filesystem and the
	// image the driver grows in place (it needs free room for the new size).
	fsOverheadPercent int64
}

// volumeBytes is the size of the guest disk volume: storage plus the filesystem overhead,
// rounded up to a whole MiB. storage is at most 1Pi, so this cannot overflow.
func (p *parameters) volumeBytes() int64 {
	b := p.storage + (p.storage*p.fsOverheadPercent+99)/100
	return (b + mebi - 1) / mebi * mebi
}

// volumeSize is volumeBytes as a quantity.
func (p *parameters) volumeSize() resource.Quantity {
	return *resource.NewQuantity(p.volumeBytes(), resource.BinarySI)
}
