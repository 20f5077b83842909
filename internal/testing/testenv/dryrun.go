package testenv

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DryRunNamespace is the namespace DryRunCreate uses when an object has none.
const DryRunNamespace = "dry-run"

// DryRunCreate asks the apiserver to validate obj as a create (server-side dry-run: admission
// and validation run, nothing is stored), so the real Pod validation judges a rendered spec.
// obj is not modified. The namespace is created when missing.
func (e *Env) DryRunCreate(ctx context.Context, obj client.Object) error {
	o := obj.DeepCopyObject().(client.Object)
	if o.GetNamespace() == "" {
		o.SetNamespace(DryRunNamespace)
	}
	if o.GetName() == "" && o.GetGenerateName() == "" {
		o.SetGenerateName("dry-run-")
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.GetNamespace()}}
	if err := e.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", ns.Name, err)
	}
	return e.Client.Create(ctx, o, client.DryRunAll)
}
