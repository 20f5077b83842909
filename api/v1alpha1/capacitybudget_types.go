package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CapacityBudgetSpec defines the capacity that several ExporterSets share.
type CapacityBudgetSpec struct {
	// Selector selects, by their labels, the ExporterSets of the budget's namespace that it
	// governs. It selects sets by a label on the set, not by a set field, so it works as well
	// under upstream's ExporterSet CRD. It must select something: an empty selector would
	// govern every set of the namespace.
	// +kubebuilder:validation:XValidation:rule="size(self.matchLabels) > 0 || size(self.matchExpressions) > 0",message="spec.selector must have matchLabels or matchExpressions: an empty selector would govern every ExporterSet of the namespace"
	Selector metav1.LabelSelector `json:"selector"`

	// Limits are what the governed sets' instances may use together, at any one time.
	Limits BudgetLimits `json:"limits"`
}

// BudgetLimits are a budget's limits.
type BudgetLimits struct {
	// Instances is the most Exporters the governed sets may have together, counted while
	// they exist (an Exporter being deleted still counts until it is gone).
	// +kubebuilder:validation:Minimum=0
	Instances int32 `json:"instances"`

	// Resources caps the sum of the governed instances' Pod requests (e.g. cpu, memory,
	// devices.kubevirt.io/kvm), as the provisioner renders them: each container's requests
	// summed, the largest init container's if greater, plus the Pod's overhead. A resource
	// not named here is not limited. At most 12 resources (a bound the API server needs to
	// cost the CEL check).
	// +kubebuilder:validation:MaxProperties=12
	// +kubebuilder:validation:XValidation:rule="self.all(k, !quantity(string(self[k])).isLessThan(quantity('0')))",message="spec.limits.resources must not be negative"
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
}

// BudgetUsage is what the governed instances use, reservations included.
type BudgetUsage struct {
	// Instances is the number of the governed sets' Exporters that exist, plus those
	// reserved and not yet seen.
	Instances int32 `json:"instances"`
	// Resources is the sum of their Pod requests, for the resources the budget limits.
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
}

// BudgetSetStatus is one governed set as the budget sees it.
type BudgetSetStatus struct {
	// Name is the ExporterSet's name.
	Name string `json:"name"`
	// Instances is the number of its Exporters that exist (being deleted included).
	Instances int32 `json:"instances"`
	// Leased is the number of its instances that serve a lease.
	Leased int32 `json:"leased"`
	// Waiting is the number of Leases that wait for one of its instances.
	Waiting int32 `json:"waiting"`
	// Wanted is how many instances the set wants by its own spec and demand.
	Wanted int32 `json:"wanted"`
	// Allowed is how many instances the budget lets the set have now: the set creates no
	// more, and retires idle instances above it.
	Allowed int32 `json:"allowed"`
}

// BudgetReservation is capacity taken for an Exporter about to be created. A controller
// adds it, with the budget's resourceVersion as precondition, before the create; it is
// dropped once the Exporter exists (it is then counted as an Exporter) or, if the create
// never happened, once it is older than the reservation grace and no such Exporter exists.
type BudgetReservation struct {
	// Exporter is the name of the Exporter to be created.
	Exporter string `json:"exporter"`
	// Set is the name of its ExporterSet.
	Set string `json:"set"`
	// Since is when the reservation was made.
	Since metav1.Time `json:"since"`
	// Resources are the Pod requests of the instance (for the resources the budget limits).
	// +optional
	Resources corev1.ResourceList `json:"resources,omitempty"`
}

// CapacityBudgetStatus is the observed state of a budget.
type CapacityBudgetStatus struct {
	// ObservedGeneration is the generation of the spec this status was computed from.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Used is what the governed instances use now, reservations included.
	// +optional
	Used BudgetUsage `json:"used,omitempty"`
	// Sets are the governed sets, by name.
	// +listType=map
	// +listMapKey=name
	// +optional
	Sets []BudgetSetStatus `json:"sets,omitempty"`
	// Reservations are the creates in flight, by Exporter name.
	// +listType=map
	// +listMapKey=exporter
	// +optional
	Reservations []BudgetReservation `json:"reservations,omitempty"`
	// Conditions: Exhausted (no capacity is left and a set wants more; the message says who
	// waits) and Overcommitted (the governed sets' minReplicas add up to more than the limit).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition types of a CapacityBudget.
const (
	// ConditionBudgetExhausted is True when the budget has no capacity left and a governed
	// set wants more instances than it is allowed; the message names the sets and what
	// waits.
	ConditionBudgetExhausted = "Exhausted"
	// ConditionBudgetOvercommitted is True when the governed sets' minReplicas add up to
	// more than the budget's limit: not every floor can be served.
	ConditionBudgetOvercommitted = "Overcommitted"
)

// CapacityBudget is the Schema for the capacitybudgets API: a limit on the instances (and
// their Pod requests) that several ExporterSets of a namespace share. When it is exhausted,
// a set with waiting Leases gets capacity before any set refills its warm buffer, and idle
// instances above their set's minReplicas are retired from sets without demand to make room.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cb,categories=jumpstarter
// +kubebuilder:printcolumn:name="Used",type=integer,JSONPath=`.status.used.instances`
// +kubebuilder:printcolumn:name="Limit",type=integer,JSONPath=`.spec.limits.instances`
// +kubebuilder:printcolumn:name="Exhausted",type=string,JSONPath=`.status.conditions[?(@.type=="Exhausted")].status`
// +kubebuilder:printcolumn:name="Overcommitted",type=string,JSONPath=`.status.conditions[?(@.type=="Overcommitted")].status`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CapacityBudget struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec defines the limits and the sets they govern.
	Spec CapacityBudgetSpec `json:"spec"`

	// Status is what the governed sets use and are allowed, written by the controller.
	// +optional
	Status CapacityBudgetStatus `json:"status,omitempty"`
}

// CapacityBudgetList is a list of CapacityBudgets.
// +kubebuilder:object:root=true
type CapacityBudgetList struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the CapacityBudgets.
	Items []CapacityBudget `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CapacityBudget{}, &CapacityBudgetList{})
}
