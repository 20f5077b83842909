package testenv

import (
	"os"

	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// WriteUserKubeconfig writes to path a kubeconfig of a user named name (a client
// certificate, no groups beyond system:authenticated), bound to nothing: a test grants it a
// Role and runs a binary as it, to check that the binary needs no more than that Role.
func (e *Env) WriteUserKubeconfig(path, name string) error {
	user, err := e.env.AddUser(envtest.User{Name: name}, nil)
	if err != nil {
		return err
	}
	b, err := user.KubeConfig()
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}
