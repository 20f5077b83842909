package main

// The images' fixed users: the QEMU Pod runs everything as 65532 (distroless's nonroot), and
// the sandbox as the pause image's usual 65535.
const (
	userNonRoot = "65532:65532"
	userPause   = "65535:65535"
	envPath     = "PATH=/usr/bin:/bin"
)

// Spec is one image: its reference (never :latest, so that the kubelet's default pull policy
// is IfNotPresent and nothing is pulled), its archive's file name, and its content.
type Spec struct {
	Ref        string
	File       string
	User       string
	Entrypoint []string
	Cmd        []string
	// Bins maps a path in the image to the stand-in binary installed there.
	Bins map[string]string
}

// Images are the tier's images.
var Images = []Spec{
	{
		// The exporter image: the init container runs `cp /jumpstarter/bin/jumpstarter-exec
		// /shared/jumpstarter-exec`, the exporter `jmp run --exporter-config ...`.
		Ref: "e2e.local/jumpstarter:e2e", File: "jumpstarter-e2e.tar", User: userNonRoot,
		Entrypoint: []string{"/usr/bin/jmp"},
		Cmd:        []string{"run", "--exporter-config", "/etc/jumpstarter/exporters/config.yaml"},
		Bins: map[string]string{
			"usr/bin/jmp":                      "jmp",
			"usr/bin/cp":                       "cp",
			"bin/cp":                           "cp",
			"jumpstarter/bin/jumpstarter-exec": "jumpstarter-exec",
		},
	},
	{
		// The target runtime sidecar: serves the launcher socket, needs /dev/kvm.
		Ref: "e2e.local/qemu-runtime:e2e", File: "qemu-runtime-e2e.tar", User: userNonRoot,
		Entrypoint: []string{"/usr/bin/qemu-runtime", "--require-kvm"},
		Bins:       map[string]string{"usr/bin/qemu-runtime": "qemu-runtime"},
	},
	{
		// A runtime that cannot start: exits 1 at once, so the sidecar crash-loops.
		Ref: "e2e.local/qemu-runtime:crash", File: "qemu-runtime-crash.tar", User: userNonRoot,
		Entrypoint: []string{"/usr/bin/qemu-runtime", "--exit-code", "1"},
		Bins:       map[string]string{"usr/bin/qemu-runtime": "qemu-runtime"},
	},
	{
		// containerd's sandbox image (its sandbox_image setting).
		Ref: "e2e.local/pause:e2e", File: "pause-e2e.tar", User: userPause,
		Entrypoint: []string{"/pause"},
		Bins:       map[string]string{"pause": "pause"},
	},
}
