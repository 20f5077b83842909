package exporterset

// The least privilege the reconciler needs, generated into config/rbac by `make manifests`.
// ExporterSets: read, and write status only (the cooldown clock lives in status for that
// reason). Exporters: create, disable (patch), release and delete. Pods: create and delete.
// Config Secrets: create, update (config re-sync) and patch (labelling credential Secrets);
// never delete (the garbage collector removes them with their Exporter). ConfigMaps: get
// (CA bundle). Leases: read. Events in the core group, as upstream's operator grants them
// (the process records through core/v1). It is a subset of the Role upstream's operator
// binds (contract §2b) but for exporters/finalizers and capacitybudgets: the finalizers verbs
// let owner references block their owner's deletion where OwnerReferencesPermissionEnforcement
// is on. coordination.k8s.io Leases: the process's per-namespace, per-provisioner locks
// (internal/controllerapp/election.go) live beside the sets they guard, as upstream's does.
// CapacityBudgets: read, and write status only (the reservations live there, written with
// the resourceVersion as precondition). Upstream's operator's Role lacks them: the
// controller checks that it may list budgets and, where it may not, does not use them.
//
// +kubebuilder:rbac:groups=virtualtarget.jumpstarter.dev,resources=exportersets,verbs=get;list;watch
// +kubebuilder:rbac:groups=virtualtarget.jumpstarter.dev,resources=exportersets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=virtualtarget.jumpstarter.dev,resources=virtualtargetclasses,verbs=get;list;watch
// +kubebuilder:rbac:groups=virtualtarget.jumpstarter.dev,resources=capacitybudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups=virtualtarget.jumpstarter.dev,resources=capacitybudgets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=jumpstarter.dev,resources=exporters,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=jumpstarter.dev,resources=leases,verbs=get;list;watch
// +kubebuilder:rbac:groups=jumpstarter.dev,resources=exporteraccesspolicies,verbs=list
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get
// +kubebuilder:rbac:groups=virtualtarget.jumpstarter.dev,resources=exportersets/finalizers,verbs=update
// +kubebuilder:rbac:groups=jumpstarter.dev,resources=exporters/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update
