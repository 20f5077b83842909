package provisionertest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// Run runs the conformance suite against p, one subtest per property.
func Run(t *testing.T, p provisioner.Provisioner, cfg Config) {
	t.Helper()
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = 30 * time.Second
	}
	s := &suite{p: p, cfg: cfg}
	ctx, cancel := context.WithTimeout(t.Context(), cfg.CallTimeout)
	desc, err := p.Describe(ctx)
	cancel()
	if err != nil {
		t.Fatalf("Describe: %v", err)
	}
	s.desc = desc
	if _, err := s.request(); err != nil {
		t.Fatalf("building a valid request: %v", err)
	}
	t.Run("Describe", s.testDescribe)
	t.Run("ValidParametersAccepted", s.testValid)
	t.Run("InvalidParametersRejected", s.testInvalid)
	t.Run("BadDriverEntriesRejected", s.testDrivers)
	t.Run("WarningsWellFormed", s.testWarnings)
	t.Run("RenderPodKeepsExporterContract", s.testRenderPod)
	t.Run("RenderPodAcceptedByAPIServer", s.testDryRun)
	t.Run("EnrichDriversKeepsExplicitConfig", s.testEnrichDrivers)
	t.Run("CleanupIdempotent", s.testCleanup)
	t.Run("Deterministic", s.testDeterministic)
	t.Run("DoesNotMutateOrShareInputs", s.testNoMutation)
	t.Run("ConcurrentCalls", s.testConcurrent)
	t.Run("Cancellation", s.testCancellation)
	if ext, ok := p.(provisioner.ExternalProvisioner); ok {
		t.Run("External", func(t *testing.T) { s.testExternal(t, ext) })
	}
}

type suite struct {
	p    provisioner.Provisioner
	cfg  Config
	desc provisioner.Description
}

func (s *suite) request() (*provisioner.Request, error) { return s.cfg.NewRequest(s.desc) }

func (s *suite) mustRequest(t *testing.T) *provisioner.Request {
	t.Helper()
	req, err := s.request()
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// ctx returns a context bounded by the call timeout.
func (s *suite) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), s.cfg.CallTimeout)
	t.Cleanup(cancel)
	return ctx
}

func (s *suite) render(t *testing.T, req *provisioner.Request) *corev1.Pod {
	t.Helper()
	pod, err := s.p.RenderPod(s.ctx(t), req)
	if err != nil {
		t.Fatalf("RenderPod of a valid request: %v", err)
	}
	if pod == nil {
		t.Fatal("RenderPod returned neither a Pod nor an error")
	}
	return pod
}

func (s *suite) testDescribe(t *testing.T) {
	d := s.desc
	if len(d.Names) == 0 {
		t.Fatal("Describe returned no provisioner names")
	}
	seen := map[string]bool{}
	for _, n := range d.Names {
		for _, msg := range validation.IsDNS1123Subdomain(n) {
			t.Errorf("provisioner name %q: %s (names look like qemu.jumpstarter.dev)", n, msg)
		}
		if seen[n] {
			t.Errorf("provisioner name %q listed twice", n)
		}
		seen[n] = true
	}
	if s.cfg.Names != nil && !sameSet(d.Names, s.cfg.Names) {
		t.Errorf("Describe names %v, want %v", d.Names, s.cfg.Names)
	}
	for role, img := range map[string]provisioner.Image{"exporter": d.DefaultImages.Exporter, "runtime": d.DefaultImages.Runtime} {
		switch img.PullPolicy {
		case "", corev1.PullAlways, corev1.PullNever, corev1.PullIfNotPresent:
		default:
			t.Errorf("default %s image pull policy %q is not Always, Never or IfNotPresent", role, img.PullPolicy)
		}
	}
	if len(d.ParameterSchema) > 0 {
		var schema map[string]any
		if err := json.Unmarshal(d.ParameterSchema, &schema); err != nil {
			t.Errorf("ParameterSchema is not a JSON object: %v", err)
		}
	}
	again, err := s.p.Describe(s.ctx(t))
	if err != nil {
		t.Fatalf("second Describe: %v", err)
	}
	if !reflect.DeepEqual(d, again) {
		t.Errorf("Describe is not stable (-first +second):\n%s", diff(d, again))
	}
}

func (s *suite) testValid(t *testing.T) {
	req := forValidate(s.mustRequest(t))
	if err := s.p.Validate(s.ctx(t), req); err != nil {
		t.Fatalf("Validate rejected the valid parameters %s: %v", req.Parameters, err)
	}
}

func (s *suite) testInvalid(t *testing.T) {
	if len(s.cfg.Invalid) == 0 {
		t.Skip("Config.Invalid lists no invalid parameters")
	}
	for _, c := range s.cfg.Invalid {
		t.Run(c.Name, func(t *testing.T) {
			req, err := s.cfg.newRequest(s.desc, c.Parameters)
			if err != nil {
				t.Fatal(err)
			}
			s.expectRejected(t, forValidate(req), c.Fields)
		})
	}
}

func (s *suite) testRenderPod(t *testing.T) {
	req := s.mustRequest(t)
	pod := s.render(t, req)
	all := append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...)
	if len(pod.Spec.Containers) == 0 {
		t.Fatal("the Pod has no containers")
	}
	var vol string
	for _, v := range pod.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName == req.ConfigSecretName {
			vol = v.Name
		}
	}
	if vol == "" {
		t.Errorf("no volume of the Pod is the exporter config Secret %q", req.ConfigSecretName)
	} else if !slices.ContainsFunc(all, func(c corev1.Container) bool {
		return slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
			return m.Name == vol && strings.TrimSuffix(m.MountPath, "/") == provisioner.ExporterConfigDir
		})
	}) {
		t.Errorf("no container mounts the config Secret volume %q at %s", vol, provisioner.ExporterConfigDir)
	}
	if img := req.Images.Exporter.Image; img != "" && !slices.ContainsFunc(all, func(c corev1.Container) bool { return c.Image == img }) {
		t.Errorf("no container runs the resolved exporter image %q", img)
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("restartPolicy is %q, want Never: an exporter that exits after its lease must complete the Pod", pod.Spec.RestartPolicy)
	}
}

func (s *suite) testDryRun(t *testing.T) {
	if s.cfg.DryRun == nil {
		t.Skip("Config.DryRun is nil: no API server judges the rendered Pod")
	}
	req := s.mustRequest(t)
	pod := s.render(t, req).DeepCopy()
	// What the reconciler does before creating it.
	pod.Name, pod.GenerateName = req.Exporter.Name, ""
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels["virtualtarget.jumpstarter.dev/exporterset"] = req.Set.Name
	if err := s.cfg.DryRun(s.ctx(t), pod); err != nil {
		t.Fatalf("the API server rejected the rendered Pod: %v", err)
	}
}

func (s *suite) testEnrichDrivers(t *testing.T) {
	req := s.mustRequest(t)
	out, err := s.p.EnrichDrivers(s.ctx(t), req)
	if err != nil {
		t.Fatalf("EnrichDrivers: %v", err)
	}
	byName := map[string]vtv1alpha1.DriverSpec{}
	for _, d := range out {
		if _, dup := byName[d.Name]; dup {
			t.Errorf("driver %q returned twice", d.Name)
		}
		byName[d.Name] = d
	}
	for _, in := range provisioner.TemplateDrivers(req) {
		got, ok := byName[in.Name]
		if !ok {
			t.Errorf("template driver %q is missing from the result", in.Name)
			continue
		}
		if in.Type != got.Type || in.Ref != got.Ref {
			t.Errorf("driver %q changed from type %q ref %q to type %q ref %q", in.Name, in.Type, in.Ref, got.Type, got.Ref)
		}
		if in.Config == nil {
			continue
		}
		var want, have map[string]json.RawMessage
		if err := json.Unmarshal(in.Config.Raw, &want); err != nil {
			continue // not an object: nothing key-wise to compare
		}
		if got.Config == nil || json.Unmarshal(got.Config.Raw, &have) != nil {
			t.Errorf("driver %q lost its config %s", in.Name, in.Config.Raw)
			continue
		}
		for k, v := range want {
			if !jsonEqual(v, have[k]) {
				t.Errorf("driver %q config key %q is %s, want the explicit %s: explicit config wins", in.Name, k, have[k], v)
			}
		}
	}
}

func (s *suite) testCleanup(t *testing.T) {
	req := s.mustRequest(t)
	for i := range 2 {
		if err := s.p.Cleanup(s.ctx(t), req); err != nil {
			t.Fatalf("Cleanup #%d: %v", i+1, err)
		}
	}
}

func (s *suite) testDeterministic(t *testing.T) {
	a, b := s.mustRequest(t), s.mustRequest(t)
	podA, podB := s.render(t, a), s.render(t, b)
	if !apiequality.Semantic.DeepEqual(podA, podB) {
		t.Errorf("two RenderPod calls of equal requests differ (-first +second):\n%s", diff(podA, podB))
	}
	dA, errA := s.p.EnrichDrivers(s.ctx(t), a)
	dB, errB := s.p.EnrichDrivers(s.ctx(t), b)
	if errA != nil || errB != nil {
		t.Fatalf("EnrichDrivers: %v, %v", errA, errB)
	}
	if !apiequality.Semantic.DeepEqual(dA, dB) {
		t.Errorf("two EnrichDrivers calls of equal requests differ (-first +second):\n%s", diff(dA, dB))
	}
}

// testNoMutation checks that no call changes its request, and that nothing returned shares
// memory with it: the reconciler sets names and labels on the Pod, and the request's objects
// come from the informer cache, which must never change.
func (s *suite) testNoMutation(t *testing.T) {
	req := s.mustRequest(t)
	before := snapshot(req)
	check := func(after string) {
		t.Helper()
		if !reflect.DeepEqual(before, req) {
			t.Errorf("the request changed %s (-before +after):\n%s", after, diff(before, req))
		}
	}
	if err := s.p.Validate(s.ctx(t), req); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	check("during Validate")
	pod := s.render(t, req)
	check("during RenderPod")
	scribble(reflect.ValueOf(pod))
	check("when the returned Pod was modified (the Pod shares memory with the request)")
	drivers, err := s.p.EnrichDrivers(s.ctx(t), req)
	if err != nil {
		t.Fatalf("EnrichDrivers: %v", err)
	}
	check("during EnrichDrivers")
	scribble(reflect.ValueOf(drivers))
	check("when the returned drivers were modified (they share memory with the request)")
	if err := s.p.Cleanup(s.ctx(t), req); err != nil {
		t.Fatalf("Cleanup: %v", err)
	}
	check("during Cleanup")
}

func (s *suite) testConcurrent(t *testing.T) {
	want := s.render(t, s.mustRequest(t))
	const n = 8
	req := s.mustRequest(t) // shared, as the reconciler shares one request between workers
	var wg sync.WaitGroup
	errs := make([]error, n)
	pods := make([]*corev1.Pod, n)
	for i := range n {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.Context(), s.cfg.CallTimeout)
			defer cancel()
			if errs[i] = s.p.Validate(ctx, forValidate(req)); errs[i] == nil {
				pods[i], errs[i] = s.p.RenderPod(ctx, req)
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("concurrent call %d: %v", i, errs[i])
		} else if !apiequality.Semantic.DeepEqual(want, pods[i]) {
			t.Errorf("concurrent RenderPod %d differs (-want +got):\n%s", i, diff(want, pods[i]))
		}
	}
}

// testCancellation calls every method with a context already cancelled and one whose deadline
// has passed: each must return promptly, and a failure must not be CodeInvalid (that would
// tell a person to fix input that is fine). The provisioner must still work afterwards.
func (s *suite) testCancellation(t *testing.T) {
	req := s.mustRequest(t)
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	expired, cancel2 := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel2()
	calls := map[string]func(context.Context) error{
		"Validate": func(ctx context.Context) error { return s.p.Validate(ctx, forValidate(req)) },
		"RenderPod": func(ctx context.Context) error {
			_, err := s.p.RenderPod(ctx, req)
			return err
		},
		"EnrichDrivers": func(ctx context.Context) error {
			_, err := s.p.EnrichDrivers(ctx, req)
			return err
		},
		"Cleanup": func(ctx context.Context) error { return s.p.Cleanup(ctx, req) },
	}
	for _, name := range slices.Sorted(maps.Keys(calls)) {
		for ctxName, ctx := range map[string]context.Context{"cancelled": cancelled, "expired": expired} {
			done := make(chan error, 1)
			go func() { done <- calls[name](ctx) }()
			select {
			case err := <-done:
				if provisioner.IsInvalid(err) {
					t.Errorf("%s with a %s context reported invalid input: %v", name, ctxName, err)
				}
			case <-time.After(s.cfg.CallTimeout):
				t.Errorf("%s with a %s context did not return within %s", name, ctxName, s.cfg.CallTimeout)
			}
		}
	}
	s.render(t, s.mustRequest(t)) // still works
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func jsonEqual(a, b json.RawMessage) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// diff shows how a and b differ, through JSON: readable, and safe with types that have
// unexported fields.
func diff(a, b any) string {
	ja, errA := json.MarshalIndent(a, "", "  ")
	jb, errB := json.MarshalIndent(b, "", "  ")
	if errA != nil || errB != nil {
		return fmt.Sprintf("first: %+v\nsecond: %+v", a, b)
	}
	if d := cmp.Diff(string(ja), string(jb)); d != "" {
		return d
	}
	return "(no difference in JSON; the Go values differ, e.g. nil against empty)"
}
