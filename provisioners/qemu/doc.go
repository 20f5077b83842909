// Package qemu is the built-in provisioner "qemu.jumpstarter.dev": it turns a
// VirtualTargetClass and an ExporterSet (merged parameters, resolved images, scheduling) into
// the instance Pod and the exporter's QEMU driver entries.
//
// The Pod follows the layout upstream Jumpstarter's images expect, so they work unchanged: a
// shared emptyDir at /shared; an init container copying the jumpstarter-exec launcher out of
// the exporter image; a native sidecar "target-runtime" (the QEMU runtime image) serving
// /shared/launcher.sock; and the main container "exporter" running `jmp run`, which reaches
// QEMU through that socket. The guest disk is a volume at /disk. KVM comes only from a
// device-plugin resource in the class's scheduling.resources, given to the runtime and, one
// device, to the exporter (whose own process must open /dev/kvm for the driver to pick KVM);
// without one QEMU emulates the guest in software (TCG). No container is privileged, none mounts a host path, all run as
// UID 65532 with every capability dropped.
//
// The parameters ("arch", "machineType", "firmware", "resources", "storage") are decoded
// strictly: an unknown key, a wrong type or an unparsable quantity is a field-path error
// rooted at "parameters" (with a did-you-mean for misspelt keys), so the reconciler can show
// it in a condition. Every accepted parameter changes the Pod or the drivers; README.md lists
// them with their defaults. Explicit driver config always wins over values derived from
// parameters, and RenderPod and EnrichDrivers run the same validation as Validate, so bad
// input is an error, never a panic or a half-valid Pod.
//
// Template driver entries of the types in DriverTypes are checked against the upstream
// driver's fields (driverfields.go, one table per driver): unknown keys, sizes, types,
// required fields, ranges and refs, with field paths under spec.template.spec.drivers. Other
// types of upstream driver packages pass with a warning (Warnings).
package qemu
