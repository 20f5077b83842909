package kubevirt

import (
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/exporterset/exporterset/provisioner"
)

// remoteTimeout bounds every request to the remote cluster, so that a partitioned cluster
// gives an error in seconds rather than a reconcile stuck on a dead TCP connection.
const remoteTimeout = 15 * time.Second

// remoteScheme knows the types the provisioner reads and writes on the remote cluster.
var remoteScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, kubevirtv1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // only on a programming error in a scheme builder
		}
	}
	return s
}()

// clients caches one controller-runtime client per kubeconfig, keyed by the kubeconfig's
// SHA-256: building one costs a discovery round trip, and every reconcile pass observes every
// instance. A rotated kubeconfig is a new key; the old client stays until the process ends,
// which is bounded by how often a class's Secret changes.
type clients struct {
	mu sync.Mutex
	m  map[[sha256.Size]byte]client.Client
}

// forRequest returns the client for the kubeconfig in req.Credentials[key].
func (c *clients) forRequest(req *provisioner.Request, key string) (client.Client, error) {
	raw := req.Credentials[key]
	if len(raw) == 0 {
		// The host passes the class's credentials Secret; without the key there is nothing to
		// connect with, which a person fixes in the Secret or the class.
		return nil, provisioner.Invalid(fmt.Errorf("kubevirt: the class's credentials Secret has no key %q with the remote cluster's kubeconfig (parameters.kubeconfigKey)", key))
	}
	sum := sha256.Sum256(raw)
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.m[sum]; ok {
		return cl, nil
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(raw)
	if err != nil {
		// Never quote the kubeconfig: it holds credentials.
		return nil, provisioner.Invalid(fmt.Errorf("kubevirt: the kubeconfig in credentials key %q does not load: %v", key, err))
	}
	cfg.Timeout = remoteTimeout
	cfg.UserAgent = "exporterset-provisioner-kubevirt"
	cl, err := client.New(cfg, client.Options{Scheme: remoteScheme})
	if err != nil {
		return nil, provisioner.Transient(fmt.Errorf("kubevirt: connecting to the remote cluster %s: %w", cfg.Host, err))
	}
	if c.m == nil {
		c.m = map[[sha256.Size]byte]client.Client{}
	}
	c.m[sum] = cl
	return cl, nil
}
