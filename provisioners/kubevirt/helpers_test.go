package kubevirt

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// baseParams are valid parameters; tests put their remote namespace in with %s.
const baseParams = `{"containerDisk": "quay.io/containerdisks/fedora:41", "resources": {"cpu": 2, "memory": "2Gi"}, "forwardPorts": {"adb": 6520}}`

// baseRequest is a valid request with the given merged parameters and drivers.
func baseRequest(params string, drivers ...vtv1alpha1.DriverSpec) *provisioner.Request {
	return &provisioner.Request{
		Set: &vtv1alpha1.ExporterSet{
			ObjectMeta: metav1.ObjectMeta{Name: "pool", Namespace: "lab", UID: "set-uid-1"},
			Spec: vtv1alpha1.ExporterSetSpec{
				VirtualTargetClassName: "kubevirt",
				Template:               vtv1alpha1.ExporterTemplate{Spec: vtv1alpha1.ExporterTemplateSpec{Drivers: drivers}},
			},
		},
		Class: &vtv1alpha1.VirtualTargetClass{
			ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: "lab"},
			Spec: vtv1alpha1.VirtualTargetClassSpec{
				Provisioner:          Name,
				CredentialsSecretRef: &corev1.LocalObjectReference{Name: "remote-kubevirt"},
			},
		},
		Parameters:       []byte(params),
		Images:           DefaultImages(),
		Exporter:         &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: "pool-abcde", Namespace: "lab", UID: "exporter-uid-1"}},
		ConfigSecretName: "pool-abcde-config",
	}
}

// remoteRequest is baseRequest for a fresh namespace of the remote cluster, with the
// kubeconfig as the class's credentials.
func remoteRequest(t *testing.T, extra string) *provisioner.Request {
	t.Helper()
	ns, err := remote.CreateNamespace(context.Background(), "vms")
	if err != nil {
		t.Fatal(err)
	}
	params := `{"namespace": "` + ns + `", "containerDisk": "quay.io/containerdisks/fedora:41"` + extra + `}`
	req := baseRequest(params)
	req.Credentials = map[string][]byte{"kubeconfig": kubeconfig}
	return req
}

// remoteClient reads the remote cluster directly (not through the proxy).
func remoteClient(t *testing.T) client.Client {
	t.Helper()
	c, err := client.New(remote.Config, client.Options{Scheme: remoteScheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// getVM returns the VM ref, or nil when there is none.
func getVM(t *testing.T, ref types.NamespacedName) *kubevirtv1.VirtualMachine {
	t.Helper()
	vm := &kubevirtv1.VirtualMachine{}
	if err := remoteClient(t).Get(context.Background(), ref, vm); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil
		}
		t.Fatal(err)
	}
	return vm
}
