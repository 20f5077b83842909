package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// RepoRoot returns the directory of the project's go.mod, found by walking up from the
// working directory (tests run in their package's directory).
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module "+modulePath+"\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the working directory", modulePath)
		}
		dir = parent
	}
}

const modulePath = "github.com/exporterset/exporterset"

// BuildCommand is what a person runs to build the control-plane binaries.
const BuildCommand = "make envtest-bins"

// ErrNoBinaries is returned when the control-plane binaries have not been built.
var ErrNoBinaries = errors.New("control-plane binaries (etcd, kube-apiserver) are not built: run `" + BuildCommand + "` (or `make test`, which builds them) and try again")

// AssetsDir returns the directory holding etcd and kube-apiserver: KUBEBUILDER_ASSETS when set,
// else the cache directory of hack/envtest-bins/build.sh. With build set it builds missing
// binaries (minutes when cold, progress on stderr); without, it returns ErrNoBinaries.
func AssetsDir(build bool) (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		for _, b := range []string{"etcd", "kube-apiserver"} {
			if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
				return "", fmt.Errorf("KUBEBUILDER_ASSETS=%s has no %s: %w", dir, b, ErrNoBinaries)
			}
		}
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	args := []string{filepath.Join(root, "hack", "envtest-bins", "build.sh")}
	if !build {
		args = append(args, "--check")
	}
	cmd := exec.Command("bash", args...)
	cmd.Stderr = os.Stderr
	cmd.Env = append(os.Environ(), "ENVTEST_BINS_ONLY="+strings.Join(requiredBinaries, " "))
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if !build && errors.As(err, &exit) && exit.ExitCode() == 3 {
			return "", ErrNoBinaries
		}
		return "", fmt.Errorf("%s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// requiredBinaries are the binaries an Env needs; kubectl and kube-controller-manager are
// built by the same script for people and benchmarks.
var requiredBinaries = []string{"etcd", "kube-apiserver"}

// CRDDir returns one of the project's CRD directories, e.g. CRDDir("bases").
func CRDDir(name string) (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "config", "crd", name), nil
}

// UpstreamCRDDir returns ../shared/reference/upstream-crds beside the repository, where the
// CRDs a real Jumpstarter cluster installs are kept as reference data, or an error when absent.
func UpstreamCRDDir() (string, error) {
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(filepath.Dir(root), "shared", "reference", "upstream-crds")
	if _, err := os.Stat(filepath.Join(dir, "jumpstarter.dev_exporters.yaml")); err != nil {
		return "", fmt.Errorf("upstream CRDs not found at %s: %w", dir, err)
	}
	return dir, nil
}
