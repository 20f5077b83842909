package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Exporter condition types set by the Jumpstarter controller.
const (
	// ExporterConditionOnline is True while the exporter was seen within the last minute and
	// has not reported Offline.
	ExporterConditionOnline = "Online"
	// ExporterConditionRegistered is True after the exporter process registered its devices.
	ExporterConditionRegistered = "Registered"
)

// ExporterSpec defines the desired state of Exporter.
type ExporterSpec struct {
	// Enabled controls whether this exporter is eligible for lease assignment. When set to
	// false, the controller will not assign new leases to this exporter. nil means enabled.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Username is the identity of the exporter, used for authentication and authorization.
	// +optional
	Username *string `json:"username,omitempty"`
}

// ExporterStatusValue is the current operational status reported by the exporter.
// +kubebuilder:validation:Enum=Unspecified;Offline;Available;BeforeLeaseHook;LeaseReady;AfterLeaseHook;BeforeLeaseHookFailed;AfterLeaseHookFailed
type ExporterStatusValue string

// Values of ExporterStatusValue.
const (
	ExporterStatusUnspecified           ExporterStatusValue = "Unspecified"
	ExporterStatusOffline               ExporterStatusValue = "Offline"
	ExporterStatusAvailable             ExporterStatusValue = "Available"
	ExporterStatusBeforeLeaseHook       ExporterStatusValue = "BeforeLeaseHook"
	ExporterStatusLeaseReady            ExporterStatusValue = "LeaseReady"
	ExporterStatusAfterLeaseHook        ExporterStatusValue = "AfterLeaseHook"
	ExporterStatusBeforeLeaseHookFailed ExporterStatusValue = "BeforeLeaseHookFailed"
	ExporterStatusAfterLeaseHookFailed  ExporterStatusValue = "AfterLeaseHookFailed"
)

// ExporterStatus defines the observed state of Exporter.
type ExporterStatus struct {
	// Conditions represent the latest available observations of the exporter state.
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// Credential is a reference to the secret containing the exporter credentials.
	// +optional
	Credential *corev1.LocalObjectReference `json:"credential,omitempty"`

	// Devices is the list of driver instances currently reported by the exporter.
	// +optional
	Devices []Device `json:"devices,omitempty"`

	// LeaseRef is a reference to the lease currently assigned to this exporter.
	// +optional
	LeaseRef *corev1.LocalObjectReference `json:"leaseRef,omitempty"`

	// LastSeen is the timestamp of the last communication from the exporter.
	// +optional
	LastSeen metav1.Time `json:"lastSeen,omitempty"`

	// Endpoint is the gRPC endpoint URL where the exporter is reachable.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`

	// ExporterStatusValue is the current operational status reported by the exporter.
	// +optional
	ExporterStatusValue ExporterStatusValue `json:"exporterStatus,omitempty"`

	// StatusMessage is an optional human-readable message describing the current state.
	// +optional
	StatusMessage string `json:"statusMessage,omitempty"`
}

// Device represents a driver instance reported by an exporter.
type Device struct {
	// Uuid is the unique identifier of the device within the exporter.
	// +optional
	Uuid string `json:"uuid,omitempty"` //nolint:revive // upstream's name

	// ParentUuid is the UUID of the parent device, if this is a child device.
	// +optional
	ParentUuid *string `json:"parent_uuid,omitempty"` //nolint:revive // upstream's name

	// Labels are key-value pairs associated with the device.
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// Exporter is the Schema for the exporters API.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Enabled",type=boolean,JSONPath=`.spec.enabled`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.exporterStatus`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.statusMessage`,priority=1
type Exporter struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state of the exporter.
	// +optional
	Spec ExporterSpec `json:"spec,omitempty"`
	// Status is the observed state, written by the Jumpstarter controller.
	// +optional
	Status ExporterStatus `json:"status,omitempty"`
}

// ExporterList contains a list of Exporter.
// +kubebuilder:object:root=true
type ExporterList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the Exporters.
	Items []Exporter `json:"items"`
}

// IsEnabled reports whether the exporter may be assigned leases (nil means enabled).
func (e *Exporter) IsEnabled() bool { return e.Spec.Enabled == nil || *e.Spec.Enabled }

func init() {
	SchemeBuilder.Register(&Exporter{}, &ExporterList{})
}
