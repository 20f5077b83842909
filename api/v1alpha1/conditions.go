package v1alpha1

// Condition types of an ExporterSet.
const (
	// ConditionAvailable is True when the pool can serve leases as its spec asks. All of
	// these must hold:
	//   1. the set is not blocked: its class exists, its provisioner is served, its
	//      parameters, drivers and selector are valid (Degraded says which is not);
	//   2. availableReplicas >= minAvailableReplicas (the warm buffer), less the free
	//      physical boards the hardware-selector annotation counts
	//      (hardwareAvailableReplicas), which the message names;
	//   3. instances that are ready and not failing, leased or not, number at least
	//      minReplicas (the floor is served by ready instances, not by Pods still starting);
	//   4. when no instance is available, none is failing and the set is not backing off
	//      after failures: a pool with nothing to hand out whose new instances fail cannot
	//      serve the next lease, whatever minAvailableReplicas says;
	//   5. for a provisioner whose targets live outside their Pods (a VM on a remote
	//      cluster), the remote end answers and the class's credentials can be read: while
	//      it does not, the targets' state is unknown (RemoteUnreachable).
	// Otherwise it is False and its reason is the most specific cause known: the blocker
	// (ClassNotFound, InvalidParameters, ...), then an instance failure (ImagePullFailed,
	// TargetCrashing, Unschedulable, ContainerCreateFailed, NotRegistering, Evicted,
	// NodeLost, StartupDeadlineExceeded, BackingOff), then a missing input
	// (CABundleMissing, CredentialsMissing), then FloorNotMet, then WarmBufferNotMet.
	// Under bindingMode WaitForFirstConsumer instances get a Pod only when a lease waits, so
	// none is available while idle: there the condition is True (reason
	// WaitingForFirstConsumer) when rules 1 and 4 hold and the set has at least
	// minAvailableReplicas instances (less the free boards) waiting for a consumer.
	ConditionAvailable = "Available"
	// ConditionProgressing is True while instances are being created, started, rolled or
	// retired towards the desired pool.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when something is wrong that the pool cannot fix by waiting:
	// a missing class, an unknown provisioner, invalid parameters, a missing CA bundle or
	// credential, or failing instances. For failures the message quotes the kubelet's or
	// scheduler's message and names an instance, its container and image, counts the
	// instances with the same problem, and says when the next attempt is while the set backs
	// off.
	ConditionDegraded = "Degraded"
	// ConditionScalingLimited is True when the set wants more instances than maxReplicas, or
	// a CapacityBudget governing it (reason BudgetExhausted), allows.
	ConditionScalingLimited = "ScalingLimited"
	// ConditionBudgetConflict is True when more than one CapacityBudget selects the set
	// (reason MultipleBudgets, naming them): the stricter applies. It is absent otherwise.
	ConditionBudgetConflict = "BudgetConflict"
	// ConditionLeasesWait is True while a Lease for the set's instances waits (Pending)
	// rather than being refused: at least one enabled Exporter of the set, not being
	// deleted, matches spec.selector. The Jumpstarter controller ends a Lease at once as
	// Unsatisfiable when no enabled Exporter matches it (NoAccess, AllDisabled), so a set
	// keeps one, without a Pod when nothing is wanted, whenever its ceiling admits one. False
	// says why it cannot: the set is blocked (its class or selector), a CapacityBudget allows
	// it no instance (NoRoom), or every Exporter is disabled and the ceiling leaves no room
	// for another (NoEnabledExporter).
	ConditionLeasesWait = "LeasesWait"
)

// ConditionReason is the reason of an ExporterSet condition, CamelCase as the API
// conventions ask. It is a type of its own, so that the controller can only set the reasons
// declared here; compare it with a condition's Reason as string(ReasonX).
type ConditionReason string

// Condition reasons of an ExporterSet.
const (
	// ReasonAsExpected: nothing is wrong.
	ReasonAsExpected ConditionReason = "AsExpected"
	// ReasonWarmBufferMet: at least minAvailableReplicas instances are available.
	ReasonWarmBufferMet ConditionReason = "WarmBufferMet"
	// ReasonWarmBufferNotMet: fewer than minAvailableReplicas instances are available.
	ReasonWarmBufferNotMet ConditionReason = "WarmBufferNotMet"
	// ReasonCreatingInstances: instances are being created.
	ReasonCreatingInstances ConditionReason = "CreatingInstances"
	// ReasonRetiringInstances: surplus instances are being disabled and removed.
	ReasonRetiringInstances ConditionReason = "RetiringInstances"
	// ReasonRollingInstances: idle instances are being replaced after a spec change.
	ReasonRollingInstances ConditionReason = "RollingInstances"
	// ReasonWaitingForCredentials: instances wait for the Jumpstarter controller's credential and endpoint.
	ReasonWaitingForCredentials ConditionReason = "WaitingForCredentials"
	// ReasonWaitingForInstances: instances exist but are not yet ready.
	ReasonWaitingForInstances ConditionReason = "WaitingForInstances"
	// ReasonClassNotFound: the VirtualTargetClass named by the set does not exist.
	ReasonClassNotFound ConditionReason = "ClassNotFound"
	// ReasonProvisionerUnknown: no registered provisioner serves the class's provisioner name.
	ReasonProvisionerUnknown ConditionReason = "ProvisionerUnknown"
	// ReasonInvalidParameters: the merged parameters were rejected by the provisioner; the message has the field path.
	ReasonInvalidParameters ConditionReason = "InvalidParameters"
	// ReasonInvalidSelector: spec.selector, or the hardware-selector annotation, cannot be
	// parsed (or the annotation is empty).
	ReasonInvalidSelector ConditionReason = "InvalidSelector"
	// ReasonSelectorMismatch: spec.selector does not match the template labels, so created instances would not be counted.
	ReasonSelectorMismatch ConditionReason = "SelectorMismatch"
	// ReasonCABundleMissing: the CA bundle ConfigMap or its key is missing.
	ReasonCABundleMissing ConditionReason = "CABundleMissing"
	// ReasonCredentialsMissing: the credential Secret or its token key is missing.
	ReasonCredentialsMissing ConditionReason = "CredentialsMissing"
	// ReasonPodsFailing: instance Pods are failing.
	ReasonPodsFailing ConditionReason = "PodsFailing"
	// ReasonProvisionerError: the provisioner failed for another reason.
	ReasonProvisionerError ConditionReason = "ProvisionerError"
	// ReasonAtMaxReplicas: the set wants more instances than maxReplicas allows.
	ReasonAtMaxReplicas ConditionReason = "AtMaxReplicas"
	// ReasonWithinLimits: the set's wanted size is within maxReplicas.
	ReasonWithinLimits ConditionReason = "WithinLimits"
	// ReasonBudgetExhausted: the set wants more instances than the CapacityBudget governing
	// it allows now (the message names the budget); other sets' instances or waiting
	// Leases hold the rest.
	ReasonBudgetExhausted ConditionReason = "BudgetExhausted"
	// ReasonMultipleBudgets: more than one CapacityBudget selects the set; the stricter
	// applies.
	ReasonMultipleBudgets ConditionReason = "MultipleBudgets"
	// ReasonWaitForFirstConsumer: the class binds on first consumer and no lease waits.
	ReasonWaitForFirstConsumer ConditionReason = "WaitingForFirstConsumer"
	// ReasonScaleDownCoolingDown: surplus instances wait for the scale-down cooldown.
	ReasonScaleDownCoolingDown ConditionReason = "ScaleDownCoolingDown"
	// ReasonFloorNotMet: fewer ready instances than minReplicas serve the pool.
	ReasonFloorNotMet ConditionReason = "FloorNotMet"
	// ReasonBackingOff: instances failed one after another; new ones are created only after
	// an exponentially growing delay (the message says when the next attempt is). Degraded
	// keeps this reason after the delay, while the replacements are tried, until an instance
	// becomes ready or the set or its class changes.
	ReasonBackingOff ConditionReason = "BackingOff"
	// ReasonReuseCheckFailing: the last instances in a row (3 or more) failed the check
	// between two leases (a lease hook, or an exporter exiting with an error after a lease)
	// and were quarantined; replacements back off. An instance that serves a lease and
	// comes back Available clears it, as does a change of the set or its class.
	ReasonReuseCheckFailing ConditionReason = "ReuseCheckFailing"
)

// Reasons of instance failures, reported by the Degraded condition (and Available, when they
// are why the pool cannot serve) with the kubelet's or scheduler's own message quoted.
const (
	// ReasonImagePullFailed: a container image cannot be pulled (ErrImagePull,
	// ImagePullBackOff, InvalidImageName, ErrImageNeverPull).
	ReasonImagePullFailed ConditionReason = "ImagePullFailed"
	// ReasonTargetCrashing: a container of the instance Pod exits with an error (the
	// runtime sidecar in CrashLoopBackOff, or the exporter terminated with Error or
	// OOMKilled).
	ReasonTargetCrashing ConditionReason = "TargetCrashing"
	// ReasonUnschedulable: the scheduler finds no node for the instance Pod.
	ReasonUnschedulable ConditionReason = "Unschedulable"
	// ReasonContainerCreateFailed: the kubelet cannot create a container
	// (CreateContainerConfigError, CreateContainerError, RunContainerError).
	ReasonContainerCreateFailed ConditionReason = "ContainerCreateFailed"
	// ReasonNotRegistering: the Pod runs but its exporter has not registered with the
	// Jumpstarter controller (a bad endpoint, CA or token, or a network problem).
	ReasonNotRegistering ConditionReason = "NotRegistering"
	// ReasonEvicted: the kubelet evicted the instance Pod (node pressure).
	ReasonEvicted ConditionReason = "Evicted"
	// ReasonNodeLost: the instance Pod's node stopped reporting (phase Unknown, or the
	// node's Ready condition is gone).
	ReasonNodeLost ConditionReason = "NodeLost"
	// ReasonStartupDeadlineExceeded: an instance was not ready within the class's
	// startupDeadline; it is replaced.
	ReasonStartupDeadlineExceeded ConditionReason = "StartupDeadlineExceeded"
	// ReasonExternalTargetFailed: the instance's target outside its Pod (a VM on a remote
	// cluster) failed, as its provisioner observed it; the message quotes the remote side.
	ReasonExternalTargetFailed ConditionReason = "ExternalTargetFailed"
	// ReasonRemoteUnreachable: the provisioner cannot reach the remote end of its external
	// targets; their state is unknown, and the set creates and deletes nothing meanwhile.
	ReasonRemoteUnreachable ConditionReason = "RemoteUnreachable"
	// ReasonEnabledExporter: LeasesWait is True, an enabled Exporter matches the selector.
	ReasonEnabledExporter ConditionReason = "EnabledExporter"
	// ReasonNoRoom: LeasesWait is False, a CapacityBudget allows the set no instance.
	ReasonNoRoom ConditionReason = "NoRoom"
	// ReasonNoEnabledExporter: LeasesWait is False, no enabled Exporter of the set stays:
	// every one is disabled (quarantined, retiring, or disabled by a person) or being
	// replaced, and the ceiling leaves no room for another.
	ReasonNoEnabledExporter ConditionReason = "NoEnabledExporter"
)
