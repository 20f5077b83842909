package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/internal/jumpsim"
	"github.com/exporterset/exporterset/internal/testenv"
)

// devNamespace is where dev mode applies the samples.
const devNamespace = "default"

type devFlags struct {
	controllerFlags
	stateDir   string
	samplesDir string
	exitAfter  time.Duration
	refresh    time.Duration
}

func (f *devFlags) register(fs *flag.FlagSet) {
	f.controllerFlags.register(fs, false)
	fs.StringVar(&f.stateDir, "state-dir", defaultStateDir(), "Where dev mode writes its kubeconfig (read by `dev lease`).")
	fs.StringVar(&f.samplesDir, "samples", "", "Directory of manifests to apply at start. Default: config/samples of the repository.")
	fs.DurationVar(&f.exitAfter, "exit-after", 0, "Stop after this long (for scripts and CI). Default: run until Ctrl-C.")
	fs.DurationVar(&f.refresh, "refresh", time.Second, "How often the live view is redrawn.")
}

func defaultStateDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "exporterset", "dev")
	}
	return filepath.Join(os.TempDir(), "exporterset-dev")
}

func devCommand(args []string) error {
	var f devFlags
	fs := flag.NewFlagSet("dev", flag.ContinueOnError)
	f.register(fs)
	// A laptop often has something on :8080 already; dev serves neither endpoint by default.
	_ = fs.Set("metrics-bind-address", "0")
	_ = fs.Set("health-probe-bind-address", "0")
	if err := parse(fs, args); err != nil {
		return err
	}
	f.zap.Level = zapLevelOrDefault(f.zap.Level)
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.zap)))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f.exitAfter > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.exitAfter)
		defer cancel()
	}
	return runDev(ctx, &f)
}

func runDev(ctx context.Context, f *devFlags) error {
	started := time.Now()
	say := func(format string, args ...any) { fmt.Printf("dev: "+format+"\n", args...) }

	say("starting a local control plane (kube-apiserver + etcd; the first run builds them, which takes minutes) ...")
	env, err := testenv.Start(testenv.WithBuild())
	if err != nil {
		return err
	}
	defer func() {
		say("stopping the control plane")
		if err := env.Stop(); err != nil {
			say("stopping: %v", err)
		}
	}()
	say("kube-apiserver at %s, up in %s", env.Config.Host, env.StartupTime.Round(time.Millisecond))

	if err := os.MkdirAll(f.stateDir, 0o700); err != nil {
		return err
	}
	kubeconfig := filepath.Join(f.stateDir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	say("kubeconfig: %s", kubeconfig)
	say("  kubectl --kubeconfig %s get exportersets,exporters,leases,pods -n %s", kubeconfig, devNamespace)
	say("  take a lease:   %s dev lease", os.Args[0])

	sim, err := jumpsim.New(env.Config)
	if err != nil {
		return err
	}
	if err := sim.Start(ctx); err != nil {
		return fmt.Errorf("starting the Jumpstarter simulator: %w", err)
	}
	defer func() { _ = sim.Stop() }()
	say("simulated Jumpstarter controller and kubelet running")

	if err := applyDevFixtures(ctx, env.Client, f.samplesDir); err != nil {
		return err
	}

	ctrlErr := make(chan error, 1)
	ctrlCtx, stopCtrl := context.WithCancel(ctx)
	defer stopCtrl()
	go func() { ctrlErr <- runController(ctrlCtx, env.Config, &f.controllerFlags) }()

	view := &liveView{c: env.Client, namespace: devNamespace, started: started, interactive: isTerminal(os.Stdout)}
	ticker := time.NewTicker(f.refresh)
	defer ticker.Stop()
	for {
		select {
		case err := <-ctrlErr:
			return err
		case <-ticker.C:
			view.draw(ctx, os.Stdout)
		case <-ctx.Done():
			view.draw(context.Background(), os.Stdout)
			stopCtrl()
			if err := <-ctrlErr; err != nil {
				return err
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				say("--exit-after %s reached", f.exitAfter)
			}
			return nil
		}
	}
}

// applyDevFixtures creates what a Jumpstarter installation would have (the CA ConfigMap)
// and the sample class and ExporterSet, in devNamespace.
func applyDevFixtures(ctx context.Context, c client.Client, samplesDir string) error {
	return applyFixtures(ctx, c, samplesDir, devNamespace)
}

// applyDevFixturesIn applies the repository's samples into namespace ns (for tests).
func applyDevFixturesIn(ctx context.Context, c client.Client, ns string) error {
	return applyFixtures(ctx, c, "", ns)
}

func applyFixtures(ctx context.Context, c client.Client, samplesDir, ns string) error {
	ca := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: exporterset.DefaultCAConfigMap, Namespace: ns},
		Data: map[string]string{exporterset.DefaultCAKey: "-----BEGIN CERTIFICATE-----\nZGV2IG1vZGUgQ0E=\n-----END CERTIFICATE-----\n"}}
	if err := c.Create(ctx, ca); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	if samplesDir == "" {
		root, err := testenv.RepoRoot()
		if err != nil {
			return fmt.Errorf("finding config/samples (run from the repository, or pass --samples): %w", err)
		}
		samplesDir = filepath.Join(root, "config", "samples")
	}
	files, err := filepath.Glob(filepath.Join(samplesDir, "*.yaml"))
	if err != nil {
		return err
	}
	for _, path := range files {
		if filepath.Base(path) == "kustomization.yaml" {
			continue
		}
		if err := applyFile(ctx, c, path, ns); err != nil {
			return err
		}
		fmt.Printf("dev: applied %s\n", path)
	}
	return nil
}

func applyFile(ctx context.Context, c client.Client, path, ns string) error {
	fh, err := os.Open(path)
	if err != nil {
		return err
	}
	defer fh.Close()
	dec := utilyaml.NewYAMLOrJSONDecoder(fh, 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetNamespace() == "" {
			u.SetNamespace(ns)
		}
		if err := c.Create(ctx, u); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("%s: creating %s %s: %w", path, u.GetKind(), u.GetName(), err)
		}
	}
}

// zapLevelOrDefault keeps dev mode's screen for the live view: errors only, unless --zap-log-level says otherwise.
func zapLevelOrDefault(l zapcore.LevelEnabler) zapcore.LevelEnabler {
	if l == nil {
		return zapcore.ErrorLevel
	}
	return l
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
