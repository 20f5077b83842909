package qemu

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/exporterset/exporterset/provisioner"
)

// Default container images, used for a role that neither the ExporterSet nor the class
// overrides (and that the embedding program has not replaced with WithDefaultImages).
const (
	// DefaultExporterImage runs `jmp run` and provides the jumpstarter-exec launcher.
	DefaultExporterImage = "quay.io/jumpstarter-dev/jumpstarter:latest"
	// DefaultRuntimeImage runs QEMU behind the launcher socket.
	DefaultRuntimeImage = "quay.io/jumpstarter-dev/virtual/qemu-runtime:latest"
	// DefaultPullPolicy is the pull policy of the default images, and of any image given
	// without one.
	DefaultPullPolicy = corev1.PullIfNotPresent
)

// DefaultImages returns the built-in default images.
func DefaultImages() provisioner.Images {
	return provisioner.Images{
		Exporter: provisioner.Image{Image: DefaultExporterImage, PullPolicy: DefaultPullPolicy},
		Runtime:  provisioner.Image{Image: DefaultRuntimeImage, PullPolicy: DefaultPullPolicy},
	}
}

// Option configures a Provisioner.
type Option func(*Provisioner)

// WithDefaultImages replaces the default images, so an embedding program can pin versions or
// point at a mirror. A role left empty keeps the built-in default; an empty pull policy
// becomes IfNotPresent.
func WithDefaultImages(images provisioner.Images) Option {
	return func(p *Provisioner) {
		p.defaults.Exporter = provisioner.ImageOr(images.Exporter, p.defaults.Exporter)
		p.defaults.Runtime = provisioner.ImageOr(images.Runtime, p.defaults.Runtime)
	}
}

// WithVersion sets the version Describe reports; by default it is the module version the
// program was built with, or "(devel)".
func WithVersion(version string) Option {
	return func(p *Provisioner) {
		if version != "" {
			p.version = version
		}
	}
}
