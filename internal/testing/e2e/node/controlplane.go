package node

import (
	"path/filepath"
)

// startScheduler starts the real kube-scheduler against kubeconfig: no leader election (one
// replica) and no serving port (nothing scrapes it).
func startScheduler(bins, logDir, kubeconfig string) (*daemon, error) {
	return startDaemon(logDir, "kube-scheduler", filepath.Join(bins, "kube-scheduler"), []string{
		"--kubeconfig", kubeconfig,
		"--authentication-kubeconfig", kubeconfig,
		"--authorization-kubeconfig", kubeconfig,
		"--leader-elect=false",
		"--secure-port=0",
		"--v=2",
	}, nil)
}

// startControllerManager starts the real kube-controller-manager: the Deployment and
// ReplicaSet controllers run the controller's Deployment, the garbage collector cascades
// owner references, the service account controller makes each namespace's "default"
// ServiceAccount, and the root CA publisher writes kube-root-ca.crt, which the projected
// service account volume of the controller's Pod reads its CA from.
func startControllerManager(bins, logDir, kubeconfig, rootCA, saKey string) (*daemon, error) {
	return startDaemon(logDir, "kube-controller-manager", filepath.Join(bins, "kube-controller-manager"), []string{
		"--kubeconfig", kubeconfig,
		"--authentication-kubeconfig", kubeconfig,
		"--authorization-kubeconfig", kubeconfig,
		"--root-ca-file", rootCA,
		"--service-account-private-key-file", saKey,
		"--leader-elect=false",
		"--secure-port=0",
		"--controllers=*",
		"--v=2",
	}, nil)
}
