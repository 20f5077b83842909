// Package v1alpha1 holds wire-compatible Go types for the Jumpstarter core objects the
// ExporterSet controller creates and reads: Exporter, Lease and ExporterAccessPolicy (only
// read) (jumpstarter.dev/v1alpha1).
// The JSON names are exactly upstream Jumpstarter's; a real cluster has upstream's CRDs
// installed, and the CRDs generated from these types serve tests and the local control plane.
//
// +kubebuilder:object:generate=true
// +groupName=jumpstarter.dev
package v1alpha1
