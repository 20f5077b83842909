package controllerapp

import "os"

// envNamespace names the controller's namespace. NAMESPACE is what
// upstream's Jumpstarter operator sets (contract §2b).
const envNamespace = "NAMESPACE"

// watchNamespaces are the namespaces to cache: --namespace when given, else NAMESPACE (as
// upstream's binary does: its Role is namespaced, so a cluster-wide list would be
// forbidden), else all (nil). The local command (no in-cluster flags) watches all.
func (f *Flags) watchNamespaces() []string {
	if len(f.namespaces) > 0 {
		return f.namespaces
	}
	if ns := os.Getenv(envNamespace); ns != "" && f.inCluster {
		return []string{ns}
	}
	return nil
}
