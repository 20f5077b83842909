package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ExporterAccessPolicySpec says which clients may lease the Exporters it selects, and at
// what priority. The Jumpstarter controller hands a Lease the free approved Exporter of the
// highest priority first, then by name; with no policy in a namespace every Exporter is
// approved at priority 0.
type ExporterAccessPolicySpec struct {
	// ExporterSelector selects the Exporters this policy applies to.
	// +optional
	ExporterSelector metav1.LabelSelector `json:"exporterSelector,omitempty"`
	// Policies are the rules: each approves the clients of its from list.
	// +optional
	Policies []Policy `json:"policies,omitempty"`
}

// Policy is one rule of an ExporterAccessPolicy.
type Policy struct {
	// Priority orders the Exporters a Lease may get: higher first.
	// +optional
	Priority int `json:"priority,omitempty"`
	// From are the clients the rule approves.
	// +optional
	From []From `json:"from,omitempty"`
	// MaximumDuration is the longest lease the rule approves.
	// +optional
	MaximumDuration *metav1.Duration `json:"maximumDuration,omitempty"`
	// SpotAccess makes leases under the rule preemptible; such Exporters are handed out last.
	// +optional
	SpotAccess bool `json:"spotAccess,omitempty"`
}

// From names the clients a rule approves.
type From struct {
	// ClientSelector selects Clients by their labels.
	// +optional
	ClientSelector metav1.LabelSelector `json:"clientSelector,omitempty"`
}

// ExporterAccessPolicyStatus is empty: the Jumpstarter controller writes none.
type ExporterAccessPolicyStatus struct{}

// ExporterAccessPolicy organises, prioritises and restricts clients' access to Exporters.
// The exporter-set controller only reads it, to warn when a set's boards would not be
// handed out before its virtual instances.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
type ExporterAccessPolicy struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the policy.
	// +optional
	Spec ExporterAccessPolicySpec `json:"spec,omitempty"`
	// Status is empty.
	// +optional
	Status ExporterAccessPolicyStatus `json:"status,omitempty"`
}

// ExporterAccessPolicyList contains a list of ExporterAccessPolicy.
// +kubebuilder:object:root=true
type ExporterAccessPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the policies.
	Items []ExporterAccessPolicy `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ExporterAccessPolicy{}, &ExporterAccessPolicyList{})
}
