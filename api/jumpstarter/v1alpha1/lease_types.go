package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Lease condition types set by the Jumpstarter controller.
const (
	// LeaseConditionPending is True while the lease waits for an exporter. Upstream never
	// flips it back after assignment: check status.exporterRef too.
	LeaseConditionPending = "Pending"
	// LeaseConditionReady is True while the lease holds an exporter.
	LeaseConditionReady = "Ready"
	// LeaseConditionUnsatisfiable is True when no enabled exporter matches the lease.
	LeaseConditionUnsatisfiable = "Unsatisfiable"
	// LeaseConditionInvalid is True when the lease spec is invalid.
	LeaseConditionInvalid = "Invalid"
)

// LeaseEndedLabel is put (value "true") on leases that have ended.
const LeaseEndedLabel = "jumpstarter.dev/lease-ended"

// LeaseSpec defines the desired state of Lease.
// +kubebuilder:validation:XValidation:rule="((has(self.selector.matchLabels) && size(self.selector.matchLabels) > 0) || (has(self.selector.matchExpressions) && size(self.selector.matchExpressions) > 0)) || (has(self.exporterRef) && has(self.exporterRef.name) && size(self.exporterRef.name) > 0)",message="one of selector or exporterRef.name is required"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.tags) || self.tags == oldSelf.tags",message="tags are immutable after creation"
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.context) || self.context == oldSelf.context",message="context is immutable after creation"
// +kubebuilder:validation:XValidation:rule="!has(self.context) || self.context.all(k, size(k) <= 32 && size(self.context[k]) <= 64)",message="context keys max 32 chars, values max 64 chars"
type LeaseSpec struct {
	// ClientRef is the client holding the lease.
	ClientRef corev1.LocalObjectReference `json:"clientRef"`

	// Duration is how long the lease lasts once it begins.
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`

	// Selector is matched against Exporter labels.
	// +kubebuilder:default={}
	Selector metav1.LabelSelector `json:"selector"`

	// ExporterRef pins the lease to one exporter by name.
	// +optional
	ExporterRef *corev1.LocalObjectReference `json:"exporterRef,omitempty"`

	// Release ends the lease now when true.
	// +optional
	Release bool `json:"release,omitempty"`

	// BeginTime is when the lease should begin.
	// +optional
	BeginTime *metav1.Time `json:"beginTime,omitempty"`

	// EndTime is when the lease should end.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`

	// AllowDisabled lets the lease be assigned a disabled exporter.
	// +optional
	AllowDisabled bool `json:"allowDisabled,omitempty"`

	// Tags are key-value pairs for the lease; immutable.
	// +kubebuilder:validation:MaxProperties=10
	// +optional
	Tags map[string]string `json:"tags,omitempty"`

	// Context is key-value metadata for the lease; immutable.
	// +kubebuilder:validation:MaxProperties=8
	// +optional
	Context map[string]string `json:"context,omitempty"`
}

// LeaseStatus defines the observed state of Lease.
type LeaseStatus struct {
	// BeginTime is when the lease began.
	// +optional
	BeginTime *metav1.Time `json:"beginTime,omitempty"`

	// EndTime is when the lease ended.
	// +optional
	EndTime *metav1.Time `json:"endTime,omitempty"`

	// ExporterRef is the exporter assigned to the lease.
	// +optional
	ExporterRef *corev1.LocalObjectReference `json:"exporterRef,omitempty"`

	// Ended is true once the lease has ended.
	Ended bool `json:"ended"`

	// Priority of the lease.
	// +optional
	Priority int `json:"priority,omitempty"`

	// SpotAccess marks a lease that may be preempted.
	// +optional
	SpotAccess bool `json:"spotAccess,omitempty"`

	// Conditions are Pending, Ready, Unsatisfiable and Invalid.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Lease is the Schema for the leases API.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Ended",type=boolean,JSONPath=`.status.ended`
// +kubebuilder:printcolumn:name="Client",type=string,JSONPath=`.spec.clientRef.name`
// +kubebuilder:printcolumn:name="Exporter",type=string,JSONPath=`.status.exporterRef.name`
type Lease struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the lease request.
	// +optional
	Spec LeaseSpec `json:"spec,omitempty"`
	// Status is written by the Jumpstarter controller.
	// +optional
	Status LeaseStatus `json:"status,omitempty"`
}

// LeaseList contains a list of Lease.
// +kubebuilder:object:root=true
type LeaseList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Leases.
	Items []Lease `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Lease{}, &LeaseList{})
}
