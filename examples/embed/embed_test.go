package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/internal/testing/jumpsim"
	"github.com/exporterset/exporterset/internal/testing/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, &env) }

// The example is built and run against a real API server: its own controller and the
// embedded reconciler (with the in-code provisioner) both work in one manager.
func TestEmbedExample(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	bin := filepath.Join(dir, "embed")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	kc := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kc); err != nil {
		t.Fatal(err)
	}
	ns, err := env.CreateNamespace(ctx, "embed")
	if err != nil {
		t.Fatal(err)
	}
	sim, err := jumpsim.New(env.Config, jumpsim.WithNamespaces(ns))
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sim.Stop() }()
	c := env.Client
	for _, obj := range []client.Object{
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: exporterset.DefaultCAConfigMap, Namespace: ns}, Data: map[string]string{exporterset.DefaultCAKey: "-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n"}},
		&vtv1alpha1.VirtualTargetClass{ObjectMeta: metav1.ObjectMeta{Name: "echo", Namespace: ns}, Spec: vtv1alpha1.VirtualTargetClassSpec{Provisioner: "echo.example.dev"}},
		&vtv1alpha1.ExporterSet{ObjectMeta: metav1.ObjectMeta{Name: "pool", Namespace: ns}, Spec: vtv1alpha1.ExporterSetSpec{
			VirtualTargetClassName: "echo", MinReplicas: 2, MaxReplicas: ptr.To[int32](3),
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"board": "echo"}},
			Template: vtv1alpha1.ExporterTemplate{Metadata: vtv1alpha1.ExporterTemplateMetadata{Labels: map[string]string{"board": "echo"}}},
		}},
	} {
		if err := c.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "--kubeconfig", kc, "--namespace", ns, "--run-for", "60s")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() { _ = cmd.Process.Kill(); <-exited }()

	deadline := time.Now().Add(45 * time.Second)
	for {
		var cm corev1.ConfigMap
		err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pool-summary"}, &cm)
		if err == nil && cm.Data["available"] == "2" {
			break // the example's own controller saw what the embedded reconciler built
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the example exited early: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("pool-summary not showing 2 available: %v %v", err, cm.Data)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
