package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/exporterset/exporterset/exporterset"
)

// ApplySamples creates in namespace ns what a Jumpstarter installation would have (the CA
// ConfigMap) and the manifests of samplesDir ("" for the repository's config/samples), as the
// local dev command and end-to-end tests start. Objects that exist are left alone. It returns
// the files applied.
func ApplySamples(ctx context.Context, c client.Client, samplesDir, ns string) ([]string, error) {
	ca := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: exporterset.DefaultCAConfigMap, Namespace: ns},
		Data: map[string]string{exporterset.DefaultCAKey: "-----BEGIN CERTIFICATE-----\nZGV2IG1vZGUgQ0E=\n-----END CERTIFICATE-----\n"}}
	if err := c.Create(ctx, ca); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	if samplesDir == "" {
		root, err := RepoRoot()
		if err != nil {
			return nil, fmt.Errorf("finding config/samples (run from the repository, or pass --samples): %w", err)
		}
		samplesDir = filepath.Join(root, "config", "samples")
	}
	files, err := filepath.Glob(filepath.Join(samplesDir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	var applied []string
	for _, path := range files {
		if filepath.Base(path) == "kustomization.yaml" {
			continue
		}
		if err := applyFile(ctx, c, path, ns); err != nil {
			return applied, err
		}
		applied = append(applied, path)
	}
	return applied, nil
}

// optionalKinds are the samples' kinds a cluster may not serve: the CapacityBudget's CRD is
// ours alone, and an API server with upstream's ExporterSet CRDs has none.
var optionalKinds = map[string]bool{"CapacityBudget": true}

// applyFile creates every object of a multi-document YAML file, in ns unless it names one.
func applyFile(ctx context.Context, c client.Client, path, ns string) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(fh, 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetNamespace() == "" {
			u.SetNamespace(ns)
		}
		err := c.Create(ctx, u)
		if meta.IsNoMatchError(err) && optionalKinds[u.GetKind()] {
			continue // a cluster without the kind's CRD (upstream's CRDs) goes without it
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%s: creating %s %s: %w", path, u.GetKind(), u.GetName(), err)
		}
	}
}
