package baremetal

// ProvisionerName is the VirtualTargetClass spec.provisioner value this package serves
// (Provisioner). The reference binary does not register it until the reconciler can run a
// hosted exporter (provisioner.HostedProvisioner).
const ProvisionerName = "qemu-baremetal.jumpstarter.dev"

// Parameter defaults. Port 22 and root are what a lab host has out of the box; the root
// directory sits under /var/lib because instances are state the host must keep across the
// controller's restarts (Inventory finds them there), not scratch space.
const (
	DefaultPort = 22
	DefaultUser = "root"
	DefaultRoot = "/var/lib/exporterset"
	// maxSlots bounds hosts[].slots: a host running more QEMU instances than this is a typo
	// rather than a plan.
	maxSlots = 1024
)

// Keys of the credentials Secret. ssh-privatekey is the key kubernetes.io/ssh-auth Secrets
// use, so `kubectl create secret generic --from-file=ssh-privatekey=...` and the typed Secret
// both work; known_hosts has OpenSSH's own file name and format.
const (
	SecretKeyPrivateKey = "ssh-privatekey"
	SecretKeyKnownHosts = "known_hosts"
)

// DefaultExporterCommand is the exporter's argv on the host when the class sets none. The path
// of the instance's config file is appended as the last argument (see ExporterSpec.Command),
// which is what `jmp run --exporter-config PATH` expects.
var DefaultExporterCommand = []string{"jmp", "run", "--exporter-config"}

// archBinaries maps the supported hosts[].arch values to the QEMU binary that emulates them;
// it is both the list of accepted architectures and the default of runtime.binary.
var archBinaries = map[string]string{
	"x86_64":  "qemu-system-x86_64",
	"aarch64": "qemu-system-aarch64",
	"riscv64": "qemu-system-riscv64",
}

// Parameters are the decoded, defaulted and validated class parameters (JEP-0014's shape):
//
//	hosts:    [{name, address, port, arch, slots}]
//	runtime:  {binary, kvm, extraArgs}
//	exporter: {command}
//	user, root, credentialsSecretRef: {name}
type Parameters struct {
	// Hosts are the lab hosts instances may be placed on; names are unique.
	Hosts []Host `json:"hosts"`
	// Runtime says how QEMU is started on a host.
	Runtime RuntimeSpec `json:"runtime"`
	// Exporter says how the Jumpstarter exporter is started on a host.
	Exporter ExporterSpec `json:"exporter"`
	// User is the SSH user (default root).
	User string `json:"user"`
	// Root is the absolute directory on every host under which instance directories live.
	Root string `json:"root"`
	// CredentialsSecretRef names the Secret holding SecretKeyPrivateKey and
	// SecretKeyKnownHosts. It is optional here because the reconciler hands credentials over
	// from the class's spec.credentialsSecretRef (provisioner.Request.Credentials); when both
	// are set the glue should insist they agree.
	CredentialsSecretRef *SecretRef `json:"credentialsSecretRef,omitempty"`
}

// Host is one lab host.
type Host struct {
	// Name identifies the host in placement, status and errors: a DNS label.
	Name string `json:"name"`
	// Address is the host name or IP address to dial.
	Address string `json:"address"`
	// Port is the SSH port (default 22).
	Port int `json:"port"`
	// Arch is the architecture QEMU emulates on this host (x86_64, aarch64, riscv64).
	Arch string `json:"arch"`
	// Slots is how many instances the host runs at most (at least 1).
	Slots int `json:"slots"`
}

// RuntimeSpec is how QEMU is started.
type RuntimeSpec struct {
	// Binary is the QEMU binary; empty means the one matching the host's arch (BinaryFor).
	Binary string `json:"binary,omitempty"`
	// KVM selects -accel kvm; otherwise -accel tcg, which works on any host.
	KVM bool `json:"kvm"`
	// ExtraArgs are appended to QEMU's argv after the arguments this package sets.
	ExtraArgs []string `json:"extraArgs,omitempty"`
}

// BinaryFor returns the QEMU binary for a host of arch: Binary when set, else the default for
// the arch (empty for an unknown arch, which validation has already refused).
func (r RuntimeSpec) BinaryFor(arch string) string {
	if r.Binary != "" {
		return r.Binary
	}
	return archBinaries[arch]
}

// ExporterSpec is how the exporter is started.
type ExporterSpec struct {
	// Command is the exporter's argv on the host. The absolute path of the instance's
	// config.yaml is APPENDED as one more argument (never substituted), so a command ends with
	// the flag that takes it, e.g. ["jmp", "run", "--exporter-config"]. It runs with the
	// instance directory as its working directory.
	Command []string `json:"command"`
}

// SecretRef names a Secret in the class's namespace scope.
type SecretRef struct {
	// Name is the Secret's name.
	Name string `json:"name"`
}

// HostByName returns the host called name.
func (p *Parameters) HostByName(name string) (Host, bool) {
	for _, h := range p.Hosts {
		if h.Name == name {
			return h, true
		}
	}
	return Host{}, false
}
