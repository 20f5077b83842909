package kubevirt

// keyHints map keys people write by habit (upstream's or the QEMU provisioner's names, a key
// at the wrong level) to the parameter they mean, per object ("" is the top level). Spelling
// mistakes are found by edit distance instead.
var keyHints = map[string]map[string]string{
	"": {
		"cpu": "resources.cpu", "cores": "resources.cpu", "memory": "resources.memory",
		"vmNamespace": "namespace", "kubeconfig": "kubeconfigKey", "kubeconfigSecretKey": "kubeconfigKey",
		"image": "containerDisk", "sshAccess": "ssh", "ports": "forwardPorts", "forwards": "forwardPorts",
		"cloudInitUserData": "cloudInit", "userData": "cloudInit", "storage": "dataVolume.storage",
	},
	"resources": {
		"cores": "resources.cpu", "cpus": "resources.cpu", "mem": "resources.memory",
		"ram": "resources.memory", "storage": "dataVolume.storage",
	},
	"dataVolume": {
		"url": "dataVolume.http", "size": "dataVolume.storage", "storageClass": "dataVolume.storageClassName",
	},
	"ssh": {"guestPort": "ssh.port"},
}
