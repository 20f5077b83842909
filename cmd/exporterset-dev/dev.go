package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/exporterset/exporterset/internal/controllerapp"
	"github.com/exporterset/exporterset/internal/testing/jumpsim"
	"github.com/exporterset/exporterset/internal/testing/testenv"
)

// devNamespace is where the samples are applied and leases taken.
const devNamespace = "default"

type devFlags struct {
	controllerapp.Flags
	stateDir   string
	samplesDir string
	exitAfter  time.Duration
	refresh    time.Duration
}

func (f *devFlags) register(fs *flag.FlagSet) {
	f.Flags.Register(fs, false)
	fs.StringVar(&f.stateDir, "state-dir", defaultStateDir(), "Where the environment's kubeconfig is written (read by `exporterset-dev lease`).")
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
	fs := flag.NewFlagSet("exporterset-dev", flag.ContinueOnError)
	f.register(fs)
	// A laptop often has something on :8080 already; dev serves neither endpoint by default.
	_ = fs.Set("metrics-bind-address", "0")
	_ = fs.Set("health-probe-bind-address", "0")
	if err := controllerapp.Parse(fs, args); err != nil {
		return err
	}
	f.Zap.Level = zapLevelOrDefault(f.Zap.Level)
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.Zap)))

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
	say("  take a lease:   %s", selfCommand(append([]string{"lease"}, stateDirArgs(f.stateDir)...)...))

	sim, err := jumpsim.New(env.Config)
	if err != nil {
		return err
	}
	if err := sim.Start(ctx); err != nil {
		return fmt.Errorf("starting the Jumpstarter simulator: %w", err)
	}
	defer func() { _ = sim.Stop() }()
	say("simulated Jumpstarter controller and kubelet running")

	applied, err := testenv.ApplySamples(ctx, env.Client, f.samplesDir, devNamespace)
	for _, path := range applied {
		say("applied %s", path)
	}
	if err != nil {
		return err
	}

	ctrlErr := make(chan error, 1)
	ctrlCtx, stopCtrl := context.WithCancel(ctx)
	defer stopCtrl()
	go func() { ctrlErr <- controllerapp.Run(ctrlCtx, env.Config, &f.Flags, version) }()

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

// zapLevelOrDefault keeps the screen for the live view: errors only, unless --zap-log-level says otherwise.
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
