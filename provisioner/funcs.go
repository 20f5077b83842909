package provisioner

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// Funcs adapts functions to a Provisioner, so a test can pass closures instead of writing a
// type. A nil function does the neutral thing: Describe returns Description, Validate and
// Cleanup succeed, EnrichDrivers returns the template's drivers, RenderPod returns an error.
type Funcs struct {
	// Description is returned by Describe when DescribeFn is nil.
	Description     Description
	DescribeFn      func(ctx context.Context) (Description, error)
	ValidateFn      func(ctx context.Context, req *Request) error
	RenderPodFn     func(ctx context.Context, req *Request) (*corev1.Pod, error)
	EnrichDriversFn func(ctx context.Context, req *Request) ([]vtv1alpha1.DriverSpec, error)
	CleanupFn       func(ctx context.Context, req *Request) error
}

var _ Provisioner = Funcs{}

// Describe calls DescribeFn or returns Description.
func (f Funcs) Describe(ctx context.Context) (Description, error) {
	if f.DescribeFn != nil {
		return f.DescribeFn(ctx)
	}
	return f.Description, nil
}

// Validate calls ValidateFn or succeeds.
func (f Funcs) Validate(ctx context.Context, req *Request) error {
	if f.ValidateFn != nil {
		return f.ValidateFn(ctx, req)
	}
	return nil
}

// RenderPod calls RenderPodFn or fails.
func (f Funcs) RenderPod(ctx context.Context, req *Request) (*corev1.Pod, error) {
	if f.RenderPodFn != nil {
		return f.RenderPodFn(ctx, req)
	}
	return nil, Errorf("RenderPod is not implemented")
}

// EnrichDrivers calls EnrichDriversFn or returns a copy of the template's drivers.
func (f Funcs) EnrichDrivers(ctx context.Context, req *Request) ([]vtv1alpha1.DriverSpec, error) {
	if f.EnrichDriversFn != nil {
		return f.EnrichDriversFn(ctx, req)
	}
	return TemplateDrivers(req), nil
}

// Cleanup calls CleanupFn or succeeds.
func (f Funcs) Cleanup(ctx context.Context, req *Request) error {
	if f.CleanupFn != nil {
		return f.CleanupFn(ctx, req)
	}
	return nil
}

// TemplateDrivers returns a deep copy of the set template's drivers, the starting point of
// EnrichDrivers.
func TemplateDrivers(req *Request) []vtv1alpha1.DriverSpec {
	if req == nil || req.Set == nil || req.Set.Spec.Template.Spec.Drivers == nil {
		return nil
	}
	in := req.Set.Spec.Template.Spec.Drivers
	out := make([]vtv1alpha1.DriverSpec, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}
