package jumpsim

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

const testTimeout = 120 * time.Second

// testCtx is a context for one test, cancelled at its end.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// startSim creates a namespace and a Simulator restricted to it, stopped at the test's end.
func startSim(t *testing.T, opts ...Option) (*Simulator, string) {
	t.Helper()
	ctx := testCtx(t)
	ns, err := env.CreateNamespace(ctx, "jumpsim")
	if err != nil {
		t.Fatal(err)
	}
	sim, err := New(env.Config, append([]Option{WithNamespaces(ns)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sim.Stop(); err != nil {
			t.Errorf("stopping simulator: %v", err)
		}
		if t.Failed() {
			for _, e := range sim.Events() {
				t.Log(e.String())
			}
		}
	})
	return sim, ns
}

func createExporter(t *testing.T, ns, name string, labels map[string]string) *jsv1.Exporter {
	t.Helper()
	ex := &jsv1.Exporter{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       jsv1.ExporterSpec{Enabled: ptr.To(true)},
	}
	if err := env.Client.Create(testCtx(t), ex); err != nil {
		t.Fatal(err)
	}
	return ex
}

// configYAML is the exporter config the ExporterSet controller would write for ex before any
// token rotation (the Simulator's tokens are predictable).
func configYAML(ex *jsv1.Exporter, exitOnLeaseEnd bool) string {
	return fmt.Sprintf(`apiVersion: jumpstarter.dev/v1alpha1
kind: ExporterConfig
metadata:
  namespace: %s
  name: %s
endpoint: %s
tls:
  ca: ""
  insecure: true
token: %s
export:
  qemu:
    type: jumpstarter_driver_qemu.driver.Qemu
    config:
      arch: x86_64
  power:
    ref: qemu.power
exitOnLeaseEnd: %t
`, ex.Namespace, ex.Name, DefaultEndpoint, Token(ex.Namespace, ex.Name, ex.UID, 0), exitOnLeaseEnd)
}

// createConfigSecret writes the exporter config Secret "<exporter>-config", owned by ex.
func createConfigSecret(t *testing.T, ex *jsv1.Exporter, exitOnLeaseEnd bool) *corev1.Secret {
	t.Helper()
	sec := configSecretFor(ex, exitOnLeaseEnd)
	if err := controllerutil.SetControllerReference(ex, sec, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(testCtx(t), sec); err != nil {
		t.Fatal(err)
	}
	return sec
}

func configSecretFor(ex *jsv1.Exporter, exitOnLeaseEnd bool) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ex.Namespace, Name: ex.Name + "-config"},
		Data:       map[string][]byte{ExporterConfigKey: []byte(configYAML(ex, exitOnLeaseEnd))},
	}
}

// exporterPod is a Pod laid out like the QEMU provisioner's: a launcher-copying init
// container, a native sidecar, and the exporter container reading the config Secret.
func exporterPod(ex *jsv1.Exporter, name string) *corev1.Pod {
	always := corev1.ContainerRestartPolicyAlways
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ex.Namespace, Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			InitContainers: []corev1.Container{
				{Name: "copy-launcher", Image: "quay.io/jumpstarter-dev/jumpstarter:latest", Command: []string{"cp"}},
				{Name: "target-runtime", Image: "quay.io/jumpstarter-dev/virtual/qemu-runtime:latest", RestartPolicy: &always},
			},
			Containers: []corev1.Container{{
				Name:    "exporter",
				Image:   "quay.io/jumpstarter-dev/jumpstarter:latest",
				Command: []string{"jmp", "run", "--exporter-config", ExporterConfigDir + "/" + ExporterConfigKey},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "config", MountPath: ExporterConfigDir, ReadOnly: true},
				},
			}},
			Volumes: []corev1.Volume{{
				Name:         "config",
				VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: ex.Name + "-config"}},
			}},
		},
	}
}

func createPod(t *testing.T, ex *jsv1.Exporter, name string) *corev1.Pod {
	t.Helper()
	pod := exporterPod(ex, name)
	if err := controllerutil.SetControllerReference(ex, pod, env.Scheme); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(testCtx(t), pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// startExporter creates an Exporter with its config Secret and Pod, as the ExporterSet
// controller will, and waits until it is Registered and Online.
func startExporter(t *testing.T, sim *Simulator, ns, name string, labels map[string]string, exitOnLeaseEnd bool) *jsv1.Exporter {
	t.Helper()
	ctx := testCtx(t)
	ex := createExporter(t, ns, name, labels)
	createConfigSecret(t, ex, exitOnLeaseEnd)
	createPod(t, ex, name)
	ready, err := sim.WaitExporterReady(ctx, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return ready
}

func getObj[T client.Object](t *testing.T, obj T) T {
	t.Helper()
	if err := env.Client.Get(testCtx(t), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	return obj
}

// eventually retries check until it returns nil or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// consistently fails if check returns an error at any time within d.
func consistently(t *testing.T, d time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := check(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// waitCount waits until the simulator recorded action n times (records follow the writes
// they describe, so a test that saw the write may be a moment early).
func waitCount(t *testing.T, sim *Simulator, action string, n int) {
	t.Helper()
	eventually(t, 5*time.Second, func() error {
		if got := sim.Count(action); got != n {
			return fmt.Errorf("%s recorded %d times, want %d", action, got, n)
		}
		return nil
	})
}
