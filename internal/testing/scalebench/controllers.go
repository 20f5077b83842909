package scalebench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Limits are the client-side rate limits (--kube-api-qps, --kube-api-burst) given to both
// controllers.
type Limits struct {
	QPS   float64 `json:"qps"`
	Burst int     `json:"burst"`
}

// ours is a running exporterset-controller.
type ours struct {
	*process
	metricsURL string
	// heapURL is its /debug/pprof/heap when it was started with a pprof address, heapOut
	// where saveHeapProfile writes it.
	heapURL, heapOut string
}

// saveHeapProfile writes the controller's heap profile to heapOut, if it has one.
func (o *ours) saveHeapProfile(ctx context.Context) error {
	if o.heapURL == "" {
		return nil
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.heapURL, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("heap profile: %s", resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	return os.WriteFile(o.heapOut, b, 0o644)
}

// startOurs runs the controller binary against the cluster as userOurs, watching
// namespaces (all when empty), and waits until /readyz says its caches are synced. A nil
// lim passes no rate-limit flags: the binary's defaults apply. extra flags come last.
func startOurs(ctx context.Context, c *Cluster, bin, logDir, tag string, namespaces []string, lim *Limits, extra []string) (*ours, error) {
	mport, err := freePort()
	if err != nil {
		return nil, err
	}
	pport, err := freePort()
	if err != nil {
		return nil, err
	}
	args := []string{"run",
		"--kubeconfig", c.Kubeconfig(userOurs),
		"--metrics-bind-address", "127.0.0.1:" + strconv.Itoa(mport),
		"--health-probe-bind-address", "127.0.0.1:" + strconv.Itoa(pport),
	}
	if lim != nil {
		args = append(args, "--kube-api-qps", strconv.FormatFloat(lim.QPS, 'f', -1, 64), "--kube-api-burst", strconv.Itoa(lim.Burst))
	}
	for _, ns := range namespaces {
		args = append(args, "--namespace", ns)
	}
	args = append(args, extra...)
	p, err := startProcess("exporterset-controller", bin, args, filepath.Join(logDir, "ours-"+tag+".log"))
	if err != nil {
		return nil, err
	}
	o := &ours{process: p, metricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", mport)}
	if err := waitReady(ctx, p, pport); err != nil {
		return nil, err
	}
	return o, nil
}

// ctrlMetrics is what the benchmark reads from the controller's metrics endpoint.
type ctrlMetrics struct {
	// clientRequests is client-go's rest_client_requests_total by HTTP method.
	clientRequests map[string]float64
	// reconciles is controller_runtime_reconcile_total of the exporterset controller.
	reconciles float64
	heapAlloc  float64
	// created is exporterset_instances_created_total: instances this process created.
	created float64
	// releaseBuckets is the cumulative histogram exporterset_lease_release_to_available_seconds.
	releaseBuckets map[float64]float64
	releaseCount   float64
}

func (o *ours) scrape(ctx context.Context) (ctrlMetrics, error) {
	text, err := fetchText(ctx, http.DefaultClient, o.metricsURL)
	if err != nil {
		return ctrlMetrics{}, err
	}
	s := parseProm(text)
	m := ctrlMetrics{
		clientRequests: sumProm(s, "rest_client_requests_total", nil, "method"),
		reconciles:     sumProm(s, "controller_runtime_reconcile_total", map[string]string{"controller": "exporterset"}, "")[""],
		heapAlloc:      sumProm(s, "go_memstats_heap_alloc_bytes", nil, "")[""],
		created:        sumProm(s, "exporterset_instances_created_total", nil, "")[""],
		releaseCount:   sumProm(s, "exporterset_lease_release_to_available_seconds_count", nil, "")[""],
		releaseBuckets: map[float64]float64{},
	}
	for le, v := range sumProm(s, "exporterset_lease_release_to_available_seconds_bucket", nil, "le") {
		f, err := strconv.ParseFloat(le, 64)
		if le == "+Inf" {
			f, err = inf, nil
		}
		if err == nil {
			m.releaseBuckets[f] = v
		}
	}
	return m, nil
}

// startReplicaSetController runs kube-controller-manager with only the ReplicaSet
// controller as userRS, and waits until it has synced: a probe ReplicaSet of 0 replicas
// created in ns gets its status written.
func startReplicaSetController(ctx context.Context, c *Cluster, bin, logDir, tag, ns string, lim Limits) (*process, error) {
	args := []string{
		"--kubeconfig", c.Kubeconfig(userRS),
		"--controllers", "replicaset",
		"--leader-elect=false",
		"--secure-port", "0",
		"--kube-api-qps", strconv.FormatFloat(lim.QPS, 'f', -1, 64),
		"--kube-api-burst", strconv.Itoa(lim.Burst),
	}
	p, err := startProcess("kube-controller-manager", bin, args, filepath.Join(logDir, "kcm-"+tag+".log"))
	if err != nil {
		return nil, err
	}
	probe := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "probe-", Namespace: ns},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: ptr.To[int32](0),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"probe": "true"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"probe": "true"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
	}
	if err := c.Client.Create(ctx, probe); err != nil {
		p.stop()
		return nil, err
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = poll(wctx, 50*time.Millisecond, func() (bool, error) {
		if err := p.exited(); err != nil {
			return false, err
		}
		if err := c.Client.Get(wctx, client.ObjectKeyFromObject(probe), probe); err != nil {
			return false, err
		}
		return probe.Status.ObservedGeneration >= probe.Generation, nil
	})
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("kube-controller-manager not ready: %w", err)
	}
	return p, nil
}
