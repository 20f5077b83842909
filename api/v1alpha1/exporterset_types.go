package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RecycleStrategy defines what happens to an instance when its lease is released.
// +kubebuilder:validation:Enum=ExitAndReplace;InPlaceReuse
type RecycleStrategy string

const (
	// RecycleExitAndReplace makes the exporter exit after one lease; its Pod completes and the
	// instance is deleted and replaced by a fresh one.
	RecycleExitAndReplace RecycleStrategy = "ExitAndReplace"
	// RecycleInPlaceReuse keeps the exporter process and its Pod across leases; data on its
	// volumes survives. A Pod that fails is still recreated for the same Exporter.
	RecycleInPlaceReuse RecycleStrategy = "InPlaceReuse"
)

// ExporterSetSpec defines the desired state of an ExporterSet.
// +kubebuilder:validation:XValidation:rule="self.maxReplicas == 0 || self.minReplicas <= self.maxReplicas",message="minReplicas must be less than or equal to maxReplicas (when maxReplicas is not 0)"
// +kubebuilder:validation:XValidation:rule="self.maxReplicas == 0 || self.minAvailableReplicas <= self.maxReplicas",message="minAvailableReplicas must be less than or equal to maxReplicas (when maxReplicas is not 0)"
type ExporterSetSpec struct {
	// Selector defines the label selector for matching exporters owned by this set. It must
	// match the template's labels.
	Selector metav1.LabelSelector `json:"selector"`

	// Template defines the exporter template for instances created by this set.
	Template ExporterTemplate `json:"template"`

	// VirtualTargetClassName references a VirtualTargetClass in the same namespace.
	// +kubebuilder:validation:MinLength=1
	VirtualTargetClassName string `json:"virtualTargetClassName"`

	// MinReplicas is the minimum number of instances (floor).
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinReplicas int32 `json:"minReplicas,omitempty"`

	// MaxReplicas is the maximum number of instances (ceiling). 0 means no upper bound.
	// It is the scale subresource's replica count, so `kubectl scale` and an HPA move it.
	// +kubebuilder:default=4
	// +kubebuilder:validation:Minimum=0
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`

	// MinAvailableReplicas is the warm buffer: ready and unleased instances.
	// +kubebuilder:default=0
	// +kubebuilder:validation:Minimum=0
	// +optional
	MinAvailableReplicas int32 `json:"minAvailableReplicas,omitempty"`

	// ScaleDownCooldown is how long to wait before scaling down excess replicas. A Go-style
	// duration such as "5m", "90s" or "1h30m".
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="scaleDownCooldown must be a non-negative duration such as 5m or 90s"
	// +optional
	ScaleDownCooldown *metav1.Duration `json:"scaleDownCooldown,omitempty"`

	// RecycleStrategy defines what happens when a lease is released. ExitAndReplace: the
	// exporter exits after its lease, and the instance is deleted and replaced. InPlaceReuse:
	// the exporter serves the next lease in the same Pod; a Pod that fails is recreated.
	// +kubebuilder:default=ExitAndReplace
	// +optional
	RecycleStrategy RecycleStrategy `json:"recycleStrategy,omitempty"`

	// Parameters are optional overrides deep-merged over the class parameters.
	// Objects merge key by key, a scalar or list here replaces the class value, and an
	// explicit null deletes the key (JSON merge patch, RFC 7386). The key `hooks` (the
	// exporter's beforeLease/afterLease hooks, see the class's parameters) is merged the same way.
	// +kubebuilder:validation:Type=object
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Parameters *apiextensionsv1.JSON `json:"parameters,omitempty"`

	// Images overrides the default container images used by the provisioner. These take
	// precedence over VirtualTargetClass-level image settings.
	// +optional
	Images *Images `json:"images,omitempty"`
}

// ExporterTemplate is the template for the Exporters an ExporterSet creates.
type ExporterTemplate struct {
	// Metadata for created Exporter resources.
	// +optional
	Metadata ExporterTemplateMetadata `json:"metadata,omitempty"`

	// Spec defines the exporter configuration.
	// +optional
	Spec ExporterTemplateSpec `json:"spec,omitempty"`
}

// ExporterTemplateMetadata is the metadata put on every created Exporter.
type ExporterTemplateMetadata struct {
	// Labels to apply to created Exporter resources. Leases select exporters by these. The
	// jumpstarter.dev/ prefix is reserved: the exporter rewrites those labels when it registers.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('jumpstarter.dev/'))",message="labels with the jumpstarter.dev/ prefix are reserved for the exporter"
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Annotations to apply to created Exporter resources.
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ExporterTemplateSpec is the exporter configuration of every instance.
type ExporterTemplateSpec struct {
	// Drivers is the list of drivers to configure on each exporter instance. The provisioner
	// may enrich entries it knows (for example the QEMU driver's launcher socket).
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(d, self.exists_one(e, e.name == d.name))",message="driver names must be unique"
	// +optional
	Drivers []DriverSpec `json:"drivers,omitempty"`
}

// ExporterSetStatus defines the observed state of an ExporterSet. Every counter is always
// serialized, zero included.
type ExporterSetStatus struct {
	// Replicas is the total number of exporter instances owned by this set.
	Replicas int32 `json:"replicas"`

	// ReadyReplicas is the number of instances that are online and registered.
	ReadyReplicas int32 `json:"readyReplicas"`

	// AvailableReplicas is the number of ready, unleased, and enabled instances (warm pool).
	AvailableReplicas int32 `json:"availableReplicas"`

	// LeasedReplicas is the number of instances currently leased.
	LeasedReplicas int32 `json:"leasedReplicas"`

	// UnavailableReplicas is the number of enabled instances that are not yet ready.
	UnavailableReplicas int32 `json:"unavailableReplicas"`

	// ExportersActive is the number of exporters currently serving a lease.
	ExportersActive int32 `json:"exportersActive"`

	// ExportersIdle is the number of exporters that are online, enabled, and not leased.
	ExportersIdle int32 `json:"exportersIdle"`

	// ExportersDisabled is the number of exporters with spec.enabled=false.
	ExportersDisabled int32 `json:"exportersDisabled"`

	// ExportersOffline is the number of enabled exporters that are not online.
	ExportersOffline int32 `json:"exportersOffline"`

	// PodsPending is the number of owned pods in Pending phase.
	PodsPending int32 `json:"podsPending"`

	// PodsRunning is the number of owned pods in Running phase.
	PodsRunning int32 `json:"podsRunning"`

	// PodsFailed is the number of owned pods in Failed phase.
	PodsFailed int32 `json:"podsFailed"`

	// PodsUnknown is the number of owned pods in Unknown or Succeeded phase.
	PodsUnknown int32 `json:"podsUnknown"`

	// FailingReplicas is the number of instances with a known failure: an image that cannot
	// be pulled, a crashing container, a Pod the scheduler cannot place, an exporter that
	// does not register, an eviction, a lost node, or a startup deadline passed. The
	// Degraded condition says which, quoting the kubelet or scheduler. A failing instance is
	// never available, even when its exporter is registered.
	// +optional
	FailingReplicas int32 `json:"failingReplicas"`

	// RestingReplicas is the number of enabled, unleased instances without a Pod: an
	// Exporter at rest that Leases wait on, whose Pod starts when a Lease waits for it (an
	// on-demand set keeps one; under WaitForFirstConsumer every idle instance rests). It
	// costs no compute, and it counts among unavailableReplicas.
	// +optional
	RestingReplicas int32 `json:"restingReplicas"`

	// HardwareAvailableReplicas is the number of free physical boards counted toward the warm
	// buffer: Exporters no pool owns that the hardware-selector annotation names and that are
	// enabled, Online, Registered and unleased. The set's own instances hold only the rest of
	// minAvailableReplicas (docs/hardware-first.md). 0 without the annotation.
	// +optional
	HardwareAvailableReplicas int32 `json:"hardwareAvailableReplicas"`

	// Selector is the serialized label selector for HPA compatibility.
	// +optional
	Selector string `json:"selector,omitempty"`

	// ObservedGeneration is the .metadata.generation the status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// SurplusSince is when the set started, without interruption, to have more instances than
	// it needs; unset while it has none. It is the scale-down cooldown clock: kept in status so
	// that it survives a controller restart and needs only the status permission, and rounded
	// up to the whole second so that the cooldown never ends early.
	// +optional
	SurplusSince *metav1.Time `json:"surplusSince,omitempty"`

	// InstanceSequence counts the instances the set has created. Instance names derive from
	// it and the set's UID, so a controller working from a stale cache computes a name it
	// already created and cannot create the same instance twice.
	// +optional
	InstanceSequence int64 `json:"instanceSequence,omitempty"`

	// Conditions represent the latest available observations of the ExporterSet state.
	// Types: Available, Progressing, Degraded and ScalingLimited.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ExporterSet is the Schema for the exportersets API: a pool of virtual Jumpstarter exporters,
// kept between a floor (minReplicas) and a ceiling (maxReplicas) with a warm buffer of
// available instances (minAvailableReplicas), grown on demand by waiting leases.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.maxReplicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=es;exset,categories=jumpstarter
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.replicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Available",type=integer,JSONPath=`.status.availableReplicas`
// +kubebuilder:printcolumn:name="Unavailable",type=integer,JSONPath=`.status.unavailableReplicas`,priority=1
// +kubebuilder:printcolumn:name="Leased",type=integer,JSONPath=`.status.leasedReplicas`
// +kubebuilder:printcolumn:name="Resting",type=integer,JSONPath=`.status.restingReplicas`
// +kubebuilder:printcolumn:name="Hardware",type=integer,JSONPath=`.status.hardwareAvailableReplicas`,priority=1
// +kubebuilder:printcolumn:name="Failing",type=integer,JSONPath=`.status.failingReplicas`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].reason`
// +kubebuilder:printcolumn:name="Problem",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].reason`,priority=1
// +kubebuilder:printcolumn:name="Class",type=string,JSONPath=`.spec.virtualTargetClassName`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ExporterSet struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec defines the desired state of the pool.
	Spec ExporterSetSpec `json:"spec"`

	// Status is the observed state of the pool, written by the controller.
	// +optional
	Status ExporterSetStatus `json:"status,omitempty"`
}

// ExporterSetList is a list of ExporterSets.
// +kubebuilder:object:root=true
type ExporterSetList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the ExporterSets.
	Items []ExporterSet `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ExporterSet{}, &ExporterSetList{})
}
