package scalebench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/exporterset/exporterset/internal/testing/testenv"
)

// The users the components talk as. The audit policy records only the controllers.
const (
	userBench    = "scalebench"
	userSim      = "jumpsim"
	userOurs     = "exporterset-controller"
	userRS       = "kube-controller-manager"
	userUpstream = "upstream-exporter-set-controller"
)

// Cluster is one kube-apiserver + etcd with the project's CRDs, an audit log of the
// controllers' requests and a kubeconfig per component.
type Cluster struct {
	// Bench reaches the apiserver as the benchmark's own admin user.
	Bench *rest.Config
	// Client is an uncached client of Bench.
	Client client.WithWatch
	// Audit reads the audit log.
	Audit *AuditLog

	env         *envtest.Environment
	dir         string
	kubeconfigs map[string]string
	configs     map[string]*rest.Config
}

// StartCluster starts the control plane from the envtest binaries of assets, keeping its
// files (kubeconfigs, audit policy and log) under dir. auditAll records every client's
// requests, not only the controllers'.
func StartCluster(assets, dir string, auditAll bool) (*Cluster, error) {
	bases, err := testenv.CRDDir("bases")
	if err != nil {
		return nil, err
	}
	jmp, err := testenv.CRDDir("jumpstarter")
	if err != nil {
		return nil, err
	}
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(auditPolicy(auditAll)), 0o600); err != nil {
		return nil, err
	}
	auditPath := filepath.Join(dir, "audit.log")
	scheme := testenv.NewScheme()
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        []string{bases, jmp},
		ErrorIfCRDPathMissing:    true,
		Scheme:                   scheme,
		CRDInstallOptions:        envtest.CRDInstallOptions{Scheme: scheme},
		ControlPlaneStartTimeout: 2 * time.Minute,
	}
	args := env.ControlPlane.GetAPIServer().Configure()
	args.Set("audit-policy-file", policy)
	args.Set("audit-log-path", auditPath)
	// One file, never rotated: the benchmark reads it by offset.
	args.Set("audit-log-maxsize", "0")
	args.Set("audit-log-maxbackup", "0")
	if _, err := env.Start(); err != nil {
		return nil, fmt.Errorf("starting kube-apiserver and etcd from %s: %w", assets, err)
	}
	c := &Cluster{env: env, dir: dir, kubeconfigs: map[string]string{}, configs: map[string]*rest.Config{}, Audit: &AuditLog{path: auditPath}}
	for _, u := range []string{userBench, userSim, userOurs, userRS, userUpstream} {
		if err := c.addUser(u); err != nil {
			_ = c.Stop()
			return nil, err
		}
	}
	c.Bench = c.Config(userBench)
	// The benchmark's own client must never be what is measured.
	c.Bench.QPS, c.Bench.Burst = 5000, 10000
	c.Client, err = client.NewWithWatch(c.Bench, client.Options{Scheme: scheme})
	if err != nil {
		_ = c.Stop()
		return nil, err
	}
	return c, nil
}

// addUser provisions a cluster-admin user and writes its kubeconfig.
func (c *Cluster) addUser(name string) error {
	u, err := c.env.AddUser(envtest.User{Name: name, Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("adding user %s: %w", name, err)
	}
	b, err := u.KubeConfig()
	if err != nil {
		return err
	}
	path := filepath.Join(c.dir, name+".kubeconfig")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return err
	}
	c.kubeconfigs[name] = path
	c.configs[name] = u.Config()
	return nil
}

// Config returns a copy of the rest config of user.
func (c *Cluster) Config(user string) *rest.Config { return rest.CopyConfig(c.configs[user]) }

// Kubeconfig returns the path of user's kubeconfig.
func (c *Cluster) Kubeconfig(user string) string { return c.kubeconfigs[user] }

// Stop stops the apiserver and etcd.
func (c *Cluster) Stop() error { return c.env.Stop() }

// APIServerRequests returns the apiserver's apiserver_request_total summed by verb: every
// client's requests (the simulator's and the benchmark's too), for context.
func (c *Cluster) APIServerRequests(ctx context.Context) (map[string]float64, error) {
	hc, err := rest.HTTPClientFor(c.Bench)
	if err != nil {
		return nil, err
	}
	text, err := fetchText(ctx, hc, c.Bench.Host+"/metrics")
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	for _, s := range parseProm(text) {
		if s.name == "apiserver_request_total" {
			out[s.labels["verb"]] += s.value
		}
	}
	return out, nil
}
