package kubevirt

import (
	"fmt"
	"net/url"
	"os"
	"testing"

	"github.com/exporterset/exporterset/internal/testing/testenv"
	"github.com/exporterset/exporterset/internal/testing/virtsim"
)

// The package's two API servers: env is the management cluster, whose Pod validation judges
// the rendered Pods; remote is the KubeVirt cluster (KubeVirt's CRDs, no KubeVirt: virtsim
// plays virt-controller), reached only through proxy so that a test can cut it off.
var (
	env, remote *testenv.Env
	proxy       *virtsim.Proxy
	// kubeconfig reaches remote through proxy, as the class's credentials Secret would.
	kubeconfig []byte
)

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kubevirt tests: %v\n", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	var err error
	if env, err = testenv.Start(); err != nil {
		return 0, err
	}
	defer func() { _ = env.Stop() }()
	if remote, err = testenv.Start(testenv.WithCRDDirs(virtsim.CRDDir())); err != nil {
		return 0, err
	}
	defer func() { _ = remote.Stop() }()
	u, err := url.Parse(remote.Config.Host)
	if err != nil {
		return 0, err
	}
	if proxy, err = virtsim.NewProxy(u.Host); err != nil {
		return 0, err
	}
	defer proxy.Close()
	if kubeconfig, err = virtsim.Kubeconfig(remote.Config, "https://"+proxy.Addr()); err != nil {
		return 0, err
	}
	return m.Run(), nil
}
