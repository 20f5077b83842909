// Package v1alpha1 holds the virtualtarget.jumpstarter.dev/v1alpha1 API: ExporterSet, a pool of
// virtual Jumpstarter exporters kept warm between a floor, a ceiling and a warm buffer, and
// VirtualTargetClass, which says how the instances of a pool are provisioned.
//
// +kubebuilder:object:generate=true
// +groupName=virtualtarget.jumpstarter.dev
package v1alpha1
