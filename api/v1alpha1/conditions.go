package v1alpha1

// Condition types of an ExporterSet.
const (
	// ConditionAvailable is True while the warm buffer (minAvailableReplicas) is met.
	ConditionAvailable = "Available"
	// ConditionProgressing is True while instances are being created, started, rolled or
	// retired towards the desired pool.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when the set cannot make progress without a person: a missing
	// class, an unknown provisioner, invalid parameters, failing Pods.
	ConditionDegraded = "Degraded"
	// ConditionScalingLimited is True when the set wants more instances than maxReplicas allows.
	ConditionScalingLimited = "ScalingLimited"
)

// Condition reasons of an ExporterSet, CamelCase as the API conventions ask.
const (
	// ReasonAsExpected: nothing is wrong.
	ReasonAsExpected = "AsExpected"
	// ReasonWarmBufferMet: at least minAvailableReplicas instances are available.
	ReasonWarmBufferMet = "WarmBufferMet"
	// ReasonWarmBufferNotMet: fewer than minAvailableReplicas instances are available.
	ReasonWarmBufferNotMet = "WarmBufferNotMet"
	// ReasonCreatingInstances: instances are being created.
	ReasonCreatingInstances = "CreatingInstances"
	// ReasonRetiringInstances: surplus instances are being disabled and removed.
	ReasonRetiringInstances = "RetiringInstances"
	// ReasonRollingInstances: idle instances are being replaced after a spec change.
	ReasonRollingInstances = "RollingInstances"
	// ReasonWaitingForCredentials: instances wait for the Jumpstarter controller's credential and endpoint.
	ReasonWaitingForCredentials = "WaitingForCredentials"
	// ReasonWaitingForInstances: instances exist but are not yet ready.
	ReasonWaitingForInstances = "WaitingForInstances"
	// ReasonClassNotFound: the VirtualTargetClass named by the set does not exist.
	ReasonClassNotFound = "ClassNotFound"
	// ReasonProvisionerUnknown: no registered provisioner serves the class's provisioner name.
	ReasonProvisionerUnknown = "ProvisionerUnknown"
	// ReasonInvalidParameters: the merged parameters were rejected by the provisioner; the message has the field path.
	ReasonInvalidParameters = "InvalidParameters"
	// ReasonInvalidSelector: spec.selector cannot be parsed.
	ReasonInvalidSelector = "InvalidSelector"
	// ReasonSelectorMismatch: spec.selector does not match the template labels, so created instances would not be counted.
	ReasonSelectorMismatch = "SelectorMismatch"
	// ReasonCABundleMissing: the CA bundle ConfigMap or its key is missing.
	ReasonCABundleMissing = "CABundleMissing"
	// ReasonCredentialsMissing: the credential Secret or its token key is missing.
	ReasonCredentialsMissing = "CredentialsMissing"
	// ReasonPodsFailing: instance Pods are failing.
	ReasonPodsFailing = "PodsFailing"
	// ReasonProvisionerError: the provisioner failed for another reason.
	ReasonProvisionerError = "ProvisionerError"
	// ReasonAtMaxReplicas: the set wants more instances than maxReplicas allows.
	ReasonAtMaxReplicas = "AtMaxReplicas"
	// ReasonWithinLimits: the set's wanted size is within maxReplicas.
	ReasonWithinLimits = "WithinLimits"
	// ReasonWaitForFirstConsumer: the class binds on first consumer and no lease waits.
	ReasonWaitForFirstConsumer = "WaitingForFirstConsumer"
	// ReasonScaleDownCoolingDown: surplus instances wait for the scale-down cooldown.
	ReasonScaleDownCoolingDown = "ScaleDownCoolingDown"
	// ReasonInstancesNotReady: some enabled instances are not ready.
	ReasonInstancesNotReady = "InstancesNotReady"
)
