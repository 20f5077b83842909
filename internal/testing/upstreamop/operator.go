// Package upstreamop records, as data, how upstream Jumpstarter's operator deploys an
// exporter-set controller: jumpstarter-dev/jumpstarter at commit b1f2bb41,
// controller/deploy/operator/internal/controller/jumpstarter/exporterset.go
// (createExporterSetDeployment and exporterSetPolicyRules; recorded in the contract page
// §2b). The drop-in tests run our binary and image exactly so, on envtest and on the real
// node.
package upstreamop

import rbacv1 "k8s.io/api/rbac/v1"

// Command is the container's command.
const Command = "/exporter-set-controller"

// NamespaceEnv is the environment variable the operator sets from metadata.namespace.
const NamespaceEnv = "NAMESPACE"

// ProbePort serves liveness /healthz and readiness /readyz.
const ProbePort = 8081

// Args are the container's args for provisioner prov.
func Args(prov string) []string {
	return []string{"--provisioner=" + prov, "--leader-elect", "--health-probe-bind-address=:8081", "--metrics-bind-address=0"}
}

// LockName is the leader election Lease upstream's binary takes for provisioner prov.
func LockName(prov string) string { return "exporter-set-controller-" + prov }

// Rules is the namespaced Role bound to the controller's ServiceAccount.
var Rules = []rbacv1.PolicyRule{
	{APIGroups: []string{"virtualtarget.jumpstarter.dev"}, Resources: []string{"exportersets"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"virtualtarget.jumpstarter.dev"}, Resources: []string{"exportersets/status", "exportersets/scale"}, Verbs: []string{"get", "update", "patch"}},
	{APIGroups: []string{"virtualtarget.jumpstarter.dev"}, Resources: []string{"exportersets/finalizers"}, Verbs: []string{"update"}},
	{APIGroups: []string{"virtualtarget.jumpstarter.dev"}, Resources: []string{"virtualtargetclasses"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"jumpstarter.dev"}, Resources: []string{"exporters"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	{APIGroups: []string{"jumpstarter.dev"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
	{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch"}},
	{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
}
