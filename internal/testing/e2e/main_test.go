//go:build e2e

// The real-node tier: the controller's image deployed from config/default onto a real node
// (containerd, runc, kubelet, kube-scheduler, kube-controller-manager), the pool's Pods
// started by that kubelet, and upstream's Jumpstarter core controller as a host process
// (package core; the scenarios skip where ../shared, which holds it, is absent). `make e2e`
// builds what it needs and runs it; see docs/e2e.md.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/exporterset/exporterset/internal/testing/e2e/node"
	"github.com/exporterset/exporterset/internal/testing/testenv"
)

var (
	ctx = context.Background()
	env *testenv.Env
	nd  *node.Node
	// kubeconfig is a cluster-admin kubeconfig of the API server.
	kubeconfig string
	// kubectl is the kubectl binary the tier runs (exec into containers, kustomize).
	kubectl string
	// workDir holds the images, the device plugin and the logs (E2E_WORK, default bin/e2e).
	workDir string
	// controllerImage is the controller image's reference, as imported.
	controllerImage string
	// upstreamCore is upstream's jumpstarter-controller (../shared/tools/upstream), ""
	// when ../shared is absent: the scenarios on the real core then skip.
	upstreamCore string
)

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "e2e: the real-node tier runs containerd and a kubelet, which need root")
		return 1
	}
	ctrllog.SetLogger(logr.Discard())
	if err := setup(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		teardown()
		return 1
	}
	// Ctrl-C or a kill from `go test -timeout` must not leave containers and mounts behind.
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "e2e: %s: stopping the node\n", s)
		teardown()
		os.Exit(130)
	}()
	code := m.Run()
	teardown()
	return code
}

func setup() error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	assets, err := testenv.AssetsDir(false)
	if err != nil {
		return err
	}
	for _, b := range []string{"kubelet", "kube-scheduler", "kube-controller-manager", "kubectl"} {
		if _, err := os.Stat(filepath.Join(assets, b)); err != nil {
			return fmt.Errorf("%s is missing from %s: run `make e2e`, which builds it", b, assets)
		}
	}
	kubectl = filepath.Join(assets, "kubectl")
	workDir = os.Getenv("E2E_WORK")
	if workDir == "" {
		workDir = filepath.Join(root, "bin", "e2e")
	}
	images, err := imageTarballs(root)
	if err != nil {
		return err
	}
	envOpts := []testenv.Option{testenv.WithServiceAccounts()}
	if bin, up, err := upstreamParts(root); err == nil {
		// Upstream's core needs upstream's four CRDs.
		upstreamCore = bin
		envOpts = append(envOpts, testenv.WithUpstreamJumpstarterCRDs(), testenv.WithCRDDirs(
			filepath.Join(up, "jumpstarter.dev_clients.yaml"), filepath.Join(up, "jumpstarter.dev_exporteraccesspolicies.yaml")))
	} else {
		fmt.Fprintf(os.Stderr, "e2e: %v: the scenarios on upstream's core will skip\n", err)
	}
	start := time.Now()
	if env, err = testenv.Start(envOpts...); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "e2e: kube-apiserver at %s\n", env.Config.Host)
	kubeconfig = filepath.Join(workDir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		return err
	}
	caFile := filepath.Join(workDir, "apiserver-ca.crt")
	if err := os.WriteFile(caFile, env.Config.CAData, 0o644); err != nil {
		return err
	}
	logs := filepath.Join(workDir, "logs")
	_ = os.RemoveAll(logs)
	nd, err = node.Start(ctx, env.Client, node.Options{
		StateDir:              node.DefaultStateDir,
		LogDir:                logs,
		Bins:                  assets,
		Kubeconfig:            kubeconfig,
		RootCAFile:            caFile,
		ServiceAccountKeyFile: filepath.Join(env.APIServerCertDir(), "sa-signer.key"),
		Images:                images,
		DevicePlugin:          filepath.Join(workDir, "kvm-device-plugin"),
		DevicePluginArgs:      []string{"--devices", "110", "--host-path", kvmStandIn},
	})
	if err != nil {
		return fmt.Errorf("starting the node (logs in %s): %w", logs, err)
	}
	fmt.Fprintf(os.Stderr, "e2e: node %s Ready %s after the API server started; logs in %s\n", node.Name, time.Since(start).Round(time.Millisecond), logs)
	return nil
}

// kvmStandIn is the host device node the device plugin hands out as /dev/kvm: this machine
// has no KVM, and the stand-in runtime only checks that the device is there.
const kvmStandIn = "/dev/null"

func teardown() {
	if nd != nil {
		if err := nd.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: stopping the node: %v\n", err)
		}
	}
	if env != nil {
		_ = env.Stop()
	}
}

// imageTarballs finds the images the tier imports: the stand-ins built into workDir/images
// and the controller image `make image` wrote.
func imageTarballs(root string) ([]string, error) {
	standins, err := filepath.Glob(filepath.Join(workDir, "images", "*.tar"))
	if err != nil {
		return nil, err
	}
	if len(standins) == 0 {
		return nil, fmt.Errorf("no stand-in images in %s: run `make e2e`, which builds them", filepath.Join(workDir, "images"))
	}
	ctrl := filepath.Join(root, "bin", "image", "exporterset-controller-linux-"+goarch()+".tar")
	ref, err := tarballRef(ctrl)
	if err != nil {
		return nil, fmt.Errorf("the controller image (`make image`): %w", err)
	}
	controllerImage = ref
	return append(standins, ctrl), nil
}
