package testenv

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// Env is a running kube-apiserver and etcd with the project's CRDs installed.
type Env struct {
	// Config reaches the apiserver as a cluster admin.
	Config *rest.Config
	// Client is a direct (uncached) client with Scheme.
	Client client.Client
	// Scheme knows the built-in types, ExporterSet/VirtualTargetClass and Exporter/Lease.
	Scheme *runtime.Scheme
	// StartupTime is how long the control plane took to start and install the CRDs.
	StartupTime time.Duration

	env *envtest.Environment
}

type options struct {
	crdDirs         []string
	build           bool
	upstreamJmp     bool
	upstreamVT      bool
	serviceAccounts bool
}

// Option changes how Start brings up the environment.
type Option func(*options)

// WithUpstreamJumpstarterCRDs installs upstream Jumpstarter's Exporter and Lease CRDs (from
// UpstreamCRDDir) instead of the ones generated from this project's types.
func WithUpstreamJumpstarterCRDs() Option { return func(o *options) { o.upstreamJmp = true } }

// WithUpstreamExporterSetCRDs installs upstream Jumpstarter's ExporterSet and
// VirtualTargetClass CRDs (from UpstreamCRDDir) instead of ours, as a cluster whose
// Jumpstarter operator installed them has: same API, a smaller status schema.
func WithUpstreamExporterSetCRDs() Option { return func(o *options) { o.upstreamVT = true } }

// WithCRDDirs installs the CRDs of these directories in addition to the project's own.
func WithCRDDirs(dirs ...string) Option {
	return func(o *options) { o.crdDirs = append(o.crdDirs, dirs...) }
}

// WithServiceAccounts turns the ServiceAccount admission plugin back on (envtest turns it
// off, since no controller makes the "default" ServiceAccounts there): Pods then get their
// projected token volume, for a real node whose controller-manager makes the accounts and
// publishes kube-root-ca.crt.
func WithServiceAccounts() Option { return func(o *options) { o.serviceAccounts = true } }

// WithBuild builds the control-plane binaries when they are missing instead of failing.
func WithBuild() Option { return func(o *options) { o.build = true } }

// NewScheme returns a scheme with every type the project reads or writes.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme,
		vtv1alpha1.AddToScheme, jumpstarterv1alpha1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err) // only on a programming error in a scheme builder
		}
	}
	return s
}

// Start starts etcd and kube-apiserver on loopback and installs the CRDs.
func Start(opts ...Option) (*Env, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	assets, err := AssetsDir(o.build)
	if err != nil {
		return nil, err
	}
	bases, err := CRDDir("bases")
	if err != nil {
		return nil, err
	}
	dirs := []string{bases}
	if o.upstreamVT {
		up, err := UpstreamCRDDir()
		if err != nil {
			return nil, err
		}
		dirs = []string{filepath.Join(up, "virtualtarget.jumpstarter.dev_exportersets.yaml"), filepath.Join(up, "virtualtarget.jumpstarter.dev_virtualtargetclasses.yaml")}
	}
	if o.upstreamJmp {
		up, err := UpstreamCRDDir()
		if err != nil {
			return nil, err
		}
		// Only the core objects: upstream's ExporterSet CRDs would clash with ours.
		dirs = append(dirs, filepath.Join(up, "jumpstarter.dev_exporters.yaml"), filepath.Join(up, "jumpstarter.dev_leases.yaml"))
	} else {
		jmp, err := CRDDir("jumpstarter")
		if err != nil {
			return nil, err
		}
		dirs = append(dirs, jmp)
	}
	dirs = append(dirs, o.crdDirs...)

	scheme := NewScheme()
	start := time.Now()
	env := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     dirs,
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme,
		CRDInstallOptions:     envtest.CRDInstallOptions{Scheme: scheme},
	}
	if o.serviceAccounts {
		env.ControlPlane.GetAPIServer().Configure().Disable("disable-admission-plugins")
	}
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	// The default client-side limits (5 QPS) would make tests measure the limiter.
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		_ = env.Stop()
		return nil, err
	}
	return &Env{Config: cfg, Client: c, Scheme: scheme, StartupTime: time.Since(start), env: env}, nil
}

// Stop stops the apiserver and etcd and removes their data.
func (e *Env) Stop() error {
	if e == nil || e.env == nil {
		return nil
	}
	return e.env.Stop()
}

// CreateNamespace creates a namespace with a generated name starting with prefix, so tests
// sharing one Env do not see each other's objects.
func (e *Env) CreateNamespace(ctx context.Context, prefix string) (string, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := e.Client.Create(ctx, ns); err != nil {
		return "", err
	}
	return ns.Name, nil
}

// Main is the body of a package's TestMain: it starts the Env into *env, runs the tests and
// stops it. A start failure fails the package with the reason (never a skip: without the
// binaries the message names the command that builds them).
func Main(m interface{ Run() int }, env **Env, opts ...Option) {
	if Fuzzing() {
		// A fuzz run (and each of its worker processes) runs only the fuzz target: no test
		// needs the API server, and starting one per worker would starve the fuzzer.
		os.Exit(m.Run())
	}
	e, err := Start(opts...)
	if err != nil {
		fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "testenv: kube-apiserver started at %s in %s\n", e.Config.Host, e.StartupTime.Round(time.Millisecond))
	*env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "testenv: stopping: %v\n", err)
	}
	os.Exit(code)
}

// WriteKubeconfig writes a kubeconfig for a cluster-admin user of the environment to path,
// so people and kubectl can use the control plane.
func (e *Env) WriteKubeconfig(path string) error {
	user, err := e.env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return err
	}
	b, err := user.KubeConfig()
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// APIServerCertDir is where the API server's serving certificate, CA and service account
// signing key (sa-signer.key) are.
func (e *Env) APIServerCertDir() string { return e.env.ControlPlane.GetAPIServer().CertDir }

// Fuzzing reports whether this test binary runs a fuzz target (go test -fuzz, or one of its
// worker processes). It parses the command line flags, as TestMain must before reading them.
func Fuzzing() bool {
	if !flag.Parsed() {
		flag.Parse()
	}
	for _, name := range []string{"test.fuzz", "test.fuzzworker"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" && f.Value.String() != "false" {
			return true
		}
	}
	return false
}
