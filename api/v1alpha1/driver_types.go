package v1alpha1

import apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

// DriverSpec is one entry of an exporter's driver tree: either a driver class with its
// configuration (type), or a reference to a child driver of another entry (ref).
// +kubebuilder:validation:XValidation:rule="has(self.type) || has(self.ref)",message="either type or ref must be set"
// +kubebuilder:validation:XValidation:rule="!(has(self.type) && has(self.ref))",message="type and ref are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="!has(self.ref) || !has(self.config)",message="ref entries must not have config"
type DriverSpec struct {
	// Name is the driver's name in the exporter's export map; unique within the list.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`

	// Type is the Python driver class path (e.g. "jumpstarter_driver_qemu.driver.Qemu").
	// Exactly one of type and ref is set.
	// +kubebuilder:validation:MinLength=1
	// +optional
	Type string `json:"type,omitempty"`

	// Ref is a dot path to a nested child driver (e.g. "qemu.power"). Exactly one of type and
	// ref is set; a ref entry has no config.
	// +kubebuilder:validation:Pattern=`^[^.]+([.][^.]+)*$`
	// +optional
	Ref string `json:"ref,omitempty"`

	// Config is the driver's configuration, passed through to the driver unchanged (the
	// provisioner may add keys the driver needs, but never overrides a key set here).
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Config *apiextensionsv1.JSON `json:"config,omitempty"`
}
