package controllerapp

import (
	"errors"
	"os"
	"strings"
)

// The environment variables that name the controller's namespace. NAMESPACE is what
// upstream's Jumpstarter operator sets (contract §2b); POD_NAMESPACE is what our manifests set.
const (
	envNamespace    = "NAMESPACE"
	envPodNamespace = "POD_NAMESPACE"
)

// serviceAccountNamespace is where a Pod finds its own namespace.
var serviceAccountNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

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

// electionNamespace is where the leader election Leases live:
// --leader-election-namespace, else NAMESPACE, else POD_NAMESPACE, else the namespace of the
// Pod's service account; "" when none is known.
func (f *Flags) electionNamespace() string {
	for _, ns := range []string{f.leaderElectionNS, os.Getenv(envNamespace), os.Getenv(envPodNamespace)} {
		if ns != "" {
			return ns
		}
	}
	if b, err := os.ReadFile(serviceAccountNamespace); err == nil {
		return strings.TrimSpace(string(b))
	}
	return ""
}

var errNoElectionNamespace = errors.New("--leader-elect needs the namespace of its Lease: set --leader-election-namespace, NAMESPACE or POD_NAMESPACE, or run in a cluster")
