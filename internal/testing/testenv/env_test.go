package testenv

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var env *Env

func TestMain(m *testing.M) { Main(m, &env) }

func TestCRDsInstalled(t *testing.T) {
	ctx := context.Background()
	var list apiextensionsv1.CustomResourceDefinitionList
	if err := env.Client.List(ctx, &list); err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, crd := range list.Items {
		got[crd.Name] = true
	}
	for _, want := range []string{
		"exportersets.virtualtarget.jumpstarter.dev", "virtualtargetclasses.virtualtarget.jumpstarter.dev",
		"capacitybudgets.virtualtarget.jumpstarter.dev",
		"exporters.jumpstarter.dev", "leases.jumpstarter.dev",
	} {
		if !got[want] {
			t.Errorf("CRD %s not installed; have %v", want, got)
		}
	}
}

func TestDryRunCreateJudgesPods(t *testing.T) {
	ctx := context.Background()
	good := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if err := env.DryRunCreate(ctx, good); err != nil {
		t.Fatalf("valid pod rejected: %v", err)
	}
	bad := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "Not_A_DNS_Label", Image: "busybox"}}}}
	if err := env.DryRunCreate(ctx, bad); err == nil {
		t.Fatal("invalid container name accepted")
	}
	// Nothing was stored.
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(DryRunNamespace)); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 0 {
		t.Fatalf("dry-run stored %d pods", len(pods.Items))
	}
}
