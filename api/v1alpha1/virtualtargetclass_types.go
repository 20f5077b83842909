package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BindingMode says when an instance's runtime (its Pod) is started.
// +kubebuilder:validation:Enum=Immediate;WaitForFirstConsumer
type BindingMode string

const (
	// BindingImmediate starts instances as soon as they are created, so a warm pool of
	// running, registered exporters waits for leases.
	BindingImmediate BindingMode = "Immediate"
	// BindingWaitForFirstConsumer keeps Exporter objects but starts no Pod until a Lease waits
	// for one: leases stay Pending (not Unsatisfiable) while the instance boots, and no compute
	// is spent on idle instances.
	BindingWaitForFirstConsumer BindingMode = "WaitForFirstConsumer"
)

// ReclaimPolicy says what happens to an instance the set retires.
// +kubebuilder:validation:Enum=Delete;Retain
type ReclaimPolicy string

const (
	// ReclaimDelete deletes a retired instance: its Exporter, Pod, Secrets and volumes.
	ReclaimDelete ReclaimPolicy = "Delete"
	// ReclaimRetain keeps a retired instance, disabled and released from the set, with its Pod
	// and data left in place for inspection until a person deletes it.
	ReclaimRetain ReclaimPolicy = "Retain"
)

// DefaultCABundleKey is the ConfigMap key a caBundleConfigMapRef reads when none is given.
const DefaultCABundleKey = "ca-bundle.crt"

// VirtualTargetClassSpec defines how the instances of an ExporterSet are provisioned.
type VirtualTargetClassSpec struct {
	// Provisioner names the provisioner that renders and runs instances of this class
	// (e.g. "qemu.jumpstarter.dev"). A controller leaves alone the sets whose class names a
	// provisioner it does not serve.
	// +kubebuilder:validation:MinLength=1
	Provisioner string `json:"provisioner"`

	// Parameters are provisioner-specific settings. An ExporterSet's parameters are
	// deep-merged over these. One key is common to every provisioner and never reaches it:
	// `hooks`, the exporter's lease hooks `{beforeLease, afterLease}`, each `{exec, script,
	// timeout, onFailure: warn|endLease|exit}` as upstream's exporter config reads them,
	// written to every instance's config file (docs/behaviour.md, "Lease hooks").
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Parameters *apiextensionsv1.JSON `json:"parameters,omitempty"`

	// Images overrides the provisioner's default container images. An ExporterSet's images
	// take precedence over these.
	// +optional
	Images *Images `json:"images,omitempty"`

	// CredentialsSecretRef names a Secret in the same namespace whose keys are handed to the
	// provisioner's containers as environment variables (never copied into the Pod spec).
	// +optional
	CredentialsSecretRef *corev1.LocalObjectReference `json:"credentialsSecretRef,omitempty"`

	// Scheduling constrains where instance Pods run and what they request.
	// +optional
	Scheduling *Scheduling `json:"scheduling,omitempty"`

	// CABundleConfigMapRef names the ConfigMap holding the CA bundle exporters use to trust the
	// Jumpstarter controller. Without it, the namespace's jumpstarter-service-ca-cert ConfigMap
	// (key ca.crt) is used.
	// +optional
	CABundleConfigMapRef *CABundleConfigMapRef `json:"caBundleConfigMapRef,omitempty"`

	// BindingMode says when an instance's Pod starts. Immediate (default): at creation, so the
	// warm pool is running and registered. WaitForFirstConsumer: Exporter objects exist (so
	// leases wait as Pending instead of ending Unsatisfiable) but a Pod starts only once a
	// Lease waits for an instance.
	// +kubebuilder:default=Immediate
	// +optional
	BindingMode BindingMode `json:"bindingMode,omitempty"`

	// ReclaimPolicy says what happens to a retired instance. Delete (default): it is deleted
	// with its Pod and data. Retain: it is disabled and released from the set, its Pod and data
	// left in place for inspection until a person deletes it.
	// +kubebuilder:default=Delete
	// +optional
	ReclaimPolicy ReclaimPolicy `json:"reclaimPolicy,omitempty"`

	// StartupDeadline is how long an instance may take from its Pod's creation (its first
	// start, or a restart under InPlaceReuse or WaitForFirstConsumer's first consumer) to
	// ready: online and registered with Jumpstarter, its target not failing. An unleased
	// instance that is not ready by then counts as failed and is replaced, subject to the
	// set's failure backoff. Unset means 10m, which leaves room for QEMU guests booting real
	// images and for image pulls; a pull or scheduling failure is reported at once either way.
	// (The default is applied by the controller, not the schema: upstream's class has no such
	// field, and a server-side default would make our defaulted objects differ from theirs.)
	// +optional
	StartupDeadline *metav1.Duration `json:"startupDeadline,omitempty"`
}

// Scheduling constrains the placement and resources of instance Pods.
type Scheduling struct {
	// NodeSelector is put on every instance Pod.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations are put on every instance Pod.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Resources are the runtime container's requests and limits. A device-plugin resource such
	// as devices.kubevirt.io/kvm here gives the runtime hardware virtualization.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// CABundleConfigMapRef selects a key of a ConfigMap in the same namespace.
type CABundleConfigMapRef struct {
	// Name of the ConfigMap.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`

	// Key in the ConfigMap holding the PEM bundle.
	// +kubebuilder:default="ca-bundle.crt"
	// +optional
	Key string `json:"key,omitempty"`
}

// VirtualTargetClass is the Schema for the virtualtargetclasses API: which provisioner creates
// instances, with which parameters, images, credentials and scheduling, and when instances are
// started and what happens to them when retired.
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=vtc,categories=jumpstarter
// +kubebuilder:printcolumn:name="Provisioner",type=string,JSONPath=`.spec.provisioner`
// +kubebuilder:printcolumn:name="Binding",type=string,JSONPath=`.spec.bindingMode`
// +kubebuilder:printcolumn:name="Reclaim",type=string,JSONPath=`.spec.reclaimPolicy`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type VirtualTargetClass struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec defines how instances of this class are provisioned.
	Spec VirtualTargetClassSpec `json:"spec"`
}

// VirtualTargetClassList is a list of VirtualTargetClasses.
// +kubebuilder:object:root=true
type VirtualTargetClassList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the VirtualTargetClasses.
	Items []VirtualTargetClass `json:"items"`
}

func init() {
	SchemeBuilder.Register(&VirtualTargetClass{}, &VirtualTargetClassList{})
}
