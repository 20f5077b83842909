// Package keda_test checks the KEDA example against the ExporterSet CRD: the ScaledObject
// names the set's group and kind, and the CRD's scale subresource is what KEDA's HPA moves.
package keda_test

import (
	"os"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

type scaledObject struct {
	Kind string `json:"kind"`
	Spec struct {
		ScaleTargetRef struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Name       string `json:"name"`
		} `json:"scaleTargetRef"`
		MinReplicaCount *int32 `json:"minReplicaCount"`
		MaxReplicaCount *int32 `json:"maxReplicaCount"`
		Triggers        []struct {
			Type     string            `json:"type"`
			Metadata map[string]string `json:"metadata"`
		} `json:"triggers"`
	} `json:"spec"`
}

func TestScaledObjectTargetsTheScaleSubresource(t *testing.T) {
	var so scaledObject
	read(t, "scaledobject.yaml", &so)
	var crd apiextensionsv1.CustomResourceDefinition
	read(t, "../../config/crd/bases/virtualtarget.jumpstarter.dev_exportersets.yaml", &crd)

	ref := so.Spec.ScaleTargetRef
	if so.Kind != "ScaledObject" || ref.Kind != crd.Spec.Names.Kind || ref.Name == "" {
		t.Fatalf("ScaledObject %s targets %s %q; want kind %s", so.Kind, ref.Kind, ref.Name, crd.Spec.Names.Kind)
	}
	served := false
	for _, v := range crd.Spec.Versions {
		if ref.APIVersion != crd.Spec.Group+"/"+v.Name {
			continue
		}
		served = true
		sc := v.Subresources
		if sc == nil || sc.Scale == nil {
			t.Fatalf("version %s has no scale subresource for KEDA's HPA", v.Name)
		}
		// The README says KEDA moves the ceiling: keep them in step.
		if sc.Scale.SpecReplicasPath != ".spec.maxReplicas" || sc.Scale.LabelSelectorPath == nil {
			t.Fatalf("scale subresource %+v; the example's comments say it sets .spec.maxReplicas", sc.Scale)
		}
	}
	if !served {
		t.Fatalf("scaleTargetRef.apiVersion %s is not a version of the CRD", ref.APIVersion)
	}
	if so.Spec.MinReplicaCount == nil || so.Spec.MaxReplicaCount == nil || *so.Spec.MinReplicaCount > *so.Spec.MaxReplicaCount {
		t.Fatalf("replica counts %v..%v", so.Spec.MinReplicaCount, so.Spec.MaxReplicaCount)
	}
	if len(so.Spec.Triggers) == 0 || so.Spec.Triggers[0].Type != "cron" {
		t.Fatal("the example is about the cron scaler")
	}
	for _, k := range []string{"timezone", "start", "end", "desiredReplicas"} {
		if so.Spec.Triggers[0].Metadata[k] == "" {
			t.Errorf("cron trigger without %s", k)
		}
	}
}

func read(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
