package qemu

// keyHints map keys people write by habit (the QEMU driver's own names, Kubernetes' names, a
// key at the wrong level) to the parameter they mean, per object ("" is the top level).
// Spelling mistakes are found by edit distance instead.
var keyHints = map[string]map[string]string{
	"": {
		"cpu": "resources.cpu", "cpus": "resources.cpu", "smp": "resources.cpu",
		"memory": "resources.memory", "mem": "resources.memory", "ram": "resources.memory",
		"disk": "resources.storage", "disk_size": "resources.storage", "diskSize": "resources.storage",
		"size": "resources.storage", "storageClassName": "storage.storageClassName",
		"accessModes": "storage.accessModes", "machine": "machineType",
	},
	"resources": {
		"cpus": "resources.cpu", "smp": "resources.cpu", "mem": "resources.memory",
		"ram": "resources.memory", "disk": "resources.storage", "disk_size": "resources.storage",
		"size": "resources.storage",
	},
	"storage": {
		// Upstream's disk helper reads storage.size; here the size is resources.storage.
		"size": "resources.storage", "class": "storage.storageClassName",
		"storageClass": "storage.storageClassName", "className": "storage.storageClassName",
	},
}

// valueHints map values people write for an enumerated parameter to the accepted one.
var valueHints = map[string]string{
	"amd64": ArchX86_64, "x64": ArchX86_64, "x86-64": ArchX86_64,
	"arm64": ArchAarch64, "aarch-64": ArchAarch64,
	"efi": FirmwareUEFI, "seabios": FirmwareBIOS,
}
