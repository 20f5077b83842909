package wire_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/plugin/internal/pluginpb"
	"github.com/exporterset/exporterset/provisioner/plugin/internal/testprov"
	"github.com/exporterset/exporterset/provisioner/plugin/internal/wire"
	"github.com/exporterset/exporterset/provisioner/provisionertest"
)

// inMemory serves impl on an in-memory gRPC connection, the protocol without processes.
func inMemory(t testing.TB, register func(*grpc.Server)) *wire.GRPCClient {
	t.Helper()
	lis := bufconn.Listen(1 << 20)
	s := grpc.NewServer()
	register(s)
	go func() { _ = s.Serve(lis) }()
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient("passthrough:///bufconn",
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return lis.DialContext(ctx) }),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return wire.NewGRPCClient(conn)
}

func serve(t testing.TB, impl provisioner.Provisioner) *wire.GRPCClient {
	return inMemory(t, func(s *grpc.Server) { pluginpb.RegisterProvisionerServer(s, wire.NewGRPCServer(impl)) })
}

type printsAs string

func (p printsAs) String() string { return string(p) }

type point struct{ X, Y int }

func TestErrorsRoundTrip(t *testing.T) {
	path := field.NewPath("parameters", "resources", "memory")
	ch := make(chan int)
	all := field.ErrorList{
		field.Invalid(path, "2 GB", "must be a quantity"),
		field.Invalid(path, 5, "an int"),
		field.Invalid(path, int64(1)<<40, "an int64"),
		field.Invalid(path, int32(-7), "an int32"),
		field.Invalid(path, 0.1, "a float64"),
		field.Invalid(path, float32(0.1), "a float32"),
		field.Invalid(path, true, "a bool"),
		field.Invalid(path, nil, "nil"),
		field.Invalid(path, point{1, 2}, "a struct"),
		field.Invalid(path, map[string]any{"b": []int{1}, "a": "<&>"}, "a map with HTML"),
		field.Invalid(path, []string{"x", "y"}, "a list"),
		field.Invalid(path, ch, "no JSON, %#v"),
		field.Invalid(path, struct {
			C chan int
			printsAs
		}{ch, "printed"}, "no JSON, a Stringer"),
		field.Invalid(path, field.OmitValueType{}, "omitted"),
		field.Required(field.NewPath("parameters", "image"), ""),
		field.NotSupported(field.NewPath("parameters", "arch"), "mips", []string{"x86_64", "aarch64"}),
		field.Forbidden(field.NewPath("parameters", "privileged"), "never"),
		field.TooLong(field.NewPath("parameters", "name"), "abcdef", 3),
		field.Duplicate(field.NewPath("spec", "drivers").Index(1).Child("name"), "qemu"),
		field.TypeInvalid(field.NewPath("parameters", "smp"), "two", "must be a number"),
		field.Invalid(path, "x", "with origin").WithOrigin("format=k8s-quantity").MarkCoveredByDeclarative(),
	}
	cases := map[string]error{
		"field errors":         provisioner.InvalidFields(all),
		"invalid, no fields":   provisioner.Invalid(errors.New("parameters are not an object")),
		"transient":            provisioner.Transient(errors.New("cloud API: 503")),
		"internal":             provisioner.Errorf("bug %d", 42),
		"plain error":          errors.New("plain"),
		"wrapped field errors": fmt.Errorf("checking the class: %w", provisioner.InvalidFields(all[:2])),
		"empty message":        provisioner.Internal(errors.New("")),
	}
	for name, want := range cases {
		t.Run(name, func(t *testing.T) {
			c := serve(t, provisioner.Funcs{ValidateFn: func(context.Context, *provisioner.Request) error { return want }})
			got := c.Validate(t.Context(), &provisioner.Request{})
			if got == nil {
				t.Fatal("no error")
			}
			if got.Error() != want.Error() {
				t.Errorf("message:\n got %q\nwant %q", got.Error(), want.Error())
			}
			if provisioner.CodeOf(got) != provisioner.CodeOf(want) {
				t.Errorf("code %s, want %s", provisioner.CodeOf(got), provisioner.CodeOf(want))
			}
			var wantPE, gotPE *provisioner.Error
			if errors.As(want, &wantPE) {
				if !errors.As(got, &gotPE) {
					t.Fatalf("got %T, want a *provisioner.Error inside", got)
				}
				if len(gotPE.Fields) != len(wantPE.Fields) {
					t.Fatalf("%d fields, want %d", len(gotPE.Fields), len(wantPE.Fields))
				}
				for i, w := range wantPE.Fields {
					g := gotPE.Fields[i]
					if g.Error() != w.Error() || g.Type != w.Type || g.Field != w.Field || g.Detail != w.Detail ||
						g.Origin != w.Origin || g.CoveredByDeclarative != w.CoveredByDeclarative {
						t.Errorf("field %d:\n got %#v (%q)\nwant %#v (%q)", i, g, g.Error(), w, w.Error())
					}
				}
			}
		})
	}
}

func TestContextErrorsAndPanicsCrossAsCodes(t *testing.T) {
	c := serve(t, provisioner.Funcs{
		ValidateFn: func(context.Context, *provisioner.Request) error { return fmt.Errorf("waiting: %w", context.Canceled) },
		CleanupFn:  func(context.Context, *provisioner.Request) error { panic("boom") },
	})
	if err := c.Validate(t.Context(), nil); !provisioner.IsTransient(err) || err.Error() != "waiting: context canceled" {
		t.Errorf("a provisioner returning a context error: %v (%s), want transient", err, provisioner.CodeOf(err))
	}
	err := c.Cleanup(t.Context(), nil)
	if provisioner.CodeOf(err) != provisioner.CodeInternal || err.Error() != "provisioner panicked in Cleanup: boom" {
		t.Errorf("a panicking provisioner: %v (%s), want internal", err, provisioner.CodeOf(err))
	}
	// The server survived the panic.
	if err := c.Cleanup(t.Context(), nil); err == nil {
		t.Error("second Cleanup succeeded?")
	}
}

func TestRequestAndResultsRoundTrip(t *testing.T) {
	cfg := provisionertest.Config{
		Parameters:    `{"image": "busybox", "nested": {"a": [1, 2.5, "x"], "b": null}}`,
		SetParameters: `{"memory": "1Gi"}`,
		Drivers: []vtv1alpha1.DriverSpec{
			{Name: "power", Type: "jumpstarter_driver_power.driver.MockPower"},
			{Name: "serial", Ref: "power.serial"},
		},
	}
	desc, _ := testprov.Provisioner{}.Describe(t.Context())
	sent, err := cfg.NewRequest(desc)
	if err != nil {
		t.Fatal(err)
	}
	var got *provisioner.Request
	wantPod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	c := serve(t, provisioner.Funcs{
		RenderPodFn: func(_ context.Context, req *provisioner.Request) (*corev1.Pod, error) {
			got = req
			return wantPod, nil
		},
		EnrichDriversFn: func(_ context.Context, req *provisioner.Request) ([]vtv1alpha1.DriverSpec, error) {
			if req.Exporter == nil {
				return nil, nil
			}
			return []vtv1alpha1.DriverSpec{}, nil
		},
	})
	pod, err := c.RenderPod(t.Context(), sent)
	if err != nil {
		t.Fatal(err)
	}
	if !apiequality.Semantic.DeepEqual(pod, wantPod) {
		t.Errorf("pod changed on the way: %+v", pod)
	}
	// Objects compare as JSON: embedded raw JSON (parameters) comes back compacted.
	if !sameJSON(got.Set, sent.Set) || !sameJSON(got.Class, sent.Class) || !sameJSON(got.Exporter, sent.Exporter) || got.Images != sent.Images ||
		got.ConfigSecretName != sent.ConfigSecretName || !jsonEqual(got.Parameters, sent.Parameters) {
		t.Errorf("request changed on the way:\n got %+v\nsent %+v", got, sent)
	}
	// nil and empty driver lists stay apart.
	if d, err := c.EnrichDrivers(t.Context(), sent.ForExporter(nil, "")); err != nil || d != nil {
		t.Errorf("nil drivers came back as %#v, %v", d, err)
	}
	if d, err := c.EnrichDrivers(t.Context(), sent); err != nil || d == nil || len(d) != 0 {
		t.Errorf("empty drivers came back as %#v, %v", d, err)
	}
	// A nil request reaches the provisioner as an empty one.
	if _, err := c.RenderPod(t.Context(), nil); err != nil || got == nil || got.Set != nil || got.Parameters != nil {
		t.Errorf("nil request arrived as %+v, %v", got, err)
	}
}

func TestDescribeRoundTrip(t *testing.T) {
	want := provisioner.Description{
		Names:           []string{"a.example.dev", "b.example.dev"},
		Version:         "v9",
		DefaultImages:   provisioner.Images{Exporter: provisioner.Image{Image: "e", PullPolicy: corev1.PullAlways}, Runtime: provisioner.Image{Image: "r"}},
		ParameterSchema: []byte(`{"type":"object"}`),
	}
	info, err := serve(t, provisioner.Funcs{Description: want}).Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// A provisioner without the external capability serves (and says) protocol 1.
	if !apiequality.Semantic.DeepEqual(info.Description, want) || info.ProtocolVersion != 1 || info.External {
		t.Errorf("got %+v, want %+v at protocol 1, not external", info, want)
	}
}

func TestUnimplementedRPCIsInternal(t *testing.T) {
	c := inMemory(t, func(*grpc.Server) {}) // a server that serves nothing: a protocol mismatch
	err := c.Validate(t.Context(), nil)
	var te *wire.TransportError
	if provisioner.CodeOf(err) != provisioner.CodeInternal || !errors.As(err, &te) || te.Code == codes.Unavailable {
		t.Errorf("got %v (%s), want an internal *TransportError", err, provisioner.CodeOf(err))
	}
}

func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && string(ja) == string(jb)
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && fmt.Sprint(x) == fmt.Sprint(y)
}
