package scalebench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/internal/testing/testenv"
	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioners/qemu"
)

// fixtures are the objects every workload starts from: upstream's sample class and pool
// (the binary serves only the built-in QEMU provisioner), and for the ReplicaSet side a Pod
// template rendered by that same provisioner, so both controllers create the same Pods.
type fixtures struct {
	class *vtv1alpha1.VirtualTargetClass
	set   *vtv1alpha1.ExporterSet
	pod   corev1.PodTemplateSpec
	// podSecret is the exporter config Secret the template's Pods mount; one per namespace.
	podSecret string
}

// rsPodName is the Exporter name the ReplicaSet template is rendered for.
const rsPodName = "rs-template"

// testCA is the content of the namespace CA ConfigMap; the controller copies it, nothing
// parses it.
const testCA = "-----BEGIN CERTIFICATE-----\nscalebench\n-----END CERTIFICATE-----\n"

func loadFixtures(ctx context.Context) (*fixtures, error) {
	root, err := testenv.RepoRoot()
	if err != nil {
		return nil, err
	}
	f := &fixtures{class: &vtv1alpha1.VirtualTargetClass{}, set: &vtv1alpha1.ExporterSet{}}
	for path, obj := range map[string]any{
		"config/samples/qemu-x86-64-class.yaml": f.class,
		"config/samples/x86-64-pool.yaml":       f.set,
	} {
		b, err := os.ReadFile(filepath.Join(root, path))
		if err != nil {
			return nil, err
		}
		if err := yaml.UnmarshalStrict(b, obj); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	// The pool is sized by each workload: no ceiling (0; unset would default to 4).
	f.set.Spec.MaxReplicas = ptr.To[int32](0)
	f.set.Spec.MinAvailableReplicas = 0

	prov := qemu.New()
	desc, err := prov.Describe(ctx)
	if err != nil {
		return nil, err
	}
	req, err := provisioner.NewRequest(f.set, f.class, desc.DefaultImages)
	if err != nil {
		return nil, err
	}
	e := &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: rsPodName, Namespace: "scalebench"}}
	f.podSecret = exporterset.ConfigSecretName(rsPodName)
	pod, err := prov.RenderPod(ctx, req.ForExporter(e, f.podSecret))
	if err != nil {
		return nil, fmt.Errorf("rendering the ReplicaSet's pod template: %w", err)
	}
	f.pod = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}}, Spec: pod.Spec}
	return f, nil
}

// prepareOurs creates the class and the CA ConfigMap in ns.
func (f *fixtures) prepareOurs(ctx context.Context, c client.Client, ns string) error {
	class := f.class.DeepCopy()
	class.Namespace = ns
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: exporterset.DefaultCAConfigMap, Namespace: ns},
		Data:       map[string]string{exporterset.DefaultCAKey: testCA},
	}
	return createAll(ctx, c, class, cm)
}

// prepareRS creates the config Secret the template's Pods mount in ns.
func (f *fixtures) prepareRS(ctx context.Context, c client.Client, ns string) error {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: f.podSecret, Namespace: ns},
		Data:       map[string][]byte{provisioner.ExporterConfigFile: []byte("apiVersion: jumpstarter.dev/v1alpha1\nkind: ExporterConfig\nexitOnLeaseEnd: false\n")},
	}
	return createAll(ctx, c, s)
}

// exporterSet is the sample pool named name in ns with minReplicas n.
func (f *fixtures) exporterSet(ns, name string, n int32) *vtv1alpha1.ExporterSet {
	s := f.set.DeepCopy()
	s.Namespace, s.Name = ns, name
	s.Spec.MinReplicas = n
	return s
}

// replicaSet is a ReplicaSet named name in ns of n Pods from the rendered template.
func (f *fixtures) replicaSet(ns, name string, n int32) *appsv1.ReplicaSet {
	labels := map[string]string{"scalebench/rs": name}
	tmpl := *f.pod.DeepCopy()
	tmpl.Labels = labels
	// A ReplicaSet admits only Always; the simulated kubelet runs both alike.
	tmpl.Spec.RestartPolicy = corev1.RestartPolicyAlways
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To(n),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: tmpl,
		},
	}
}

func createAll(ctx context.Context, c client.Client, objs ...client.Object) error {
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating %T %s: %w", o, o.GetName(), err)
		}
	}
	return nil
}

// createNamespaces creates the namespaces (existing ones are fine).
func createNamespaces(ctx context.Context, c client.Client, names []string) error {
	for _, n := range names {
		if err := createAll(ctx, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: n}}); err != nil {
			return err
		}
	}
	return nil
}
