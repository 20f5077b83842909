package v1alpha1

import corev1 "k8s.io/api/core/v1"

// ImageSpec is one container image choice: a reference and its pull policy.
type ImageSpec struct {
	// Image is the container image reference (e.g. "quay.io/org/repo:tag").
	// +optional
	Image string `json:"image,omitempty"`

	// ImagePullPolicy defines the pull policy for the container image.
	// +kubebuilder:validation:Enum=Always;Never;IfNotPresent
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
}

// Images overrides the container images a provisioner uses, per container role. A role's whole
// {image, imagePullPolicy} pair replaces the lower-precedence pair; fields are never mixed.
type Images struct {
	// Exporter overrides the exporter sidecar container image.
	// +optional
	Exporter *ImageSpec `json:"exporter,omitempty"`

	// Runtime overrides the provisioner-specific runtime container image (e.g. QEMU runtime for
	// the qemu.jumpstarter.dev provisioner).
	// +optional
	Runtime *ImageSpec `json:"runtime,omitempty"`
}
