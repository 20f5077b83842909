package scalebench

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// MemoryResult compares the controller's RSS after the same scale-up with and without
// unrelated Pods and Secrets in the cluster, the controller watching all namespaces.
type MemoryResult struct {
	// Junk is how many Pods and how many Secrets were created in JunkNamespace.
	Junk          int     `json:"junk"`
	JunkNamespace string  `json:"junkNamespace"`
	JunkSeconds   float64 `json:"junkCreateSeconds"`
	Without       *Result `json:"without"`
	With          *Result `json:"with"`
	// RSSRatio is With.RSSBytes / Without.RSSBytes.
	RSSRatio float64 `json:"rssRatio"`
}

// Namespaces of the memory check.
const (
	nsMemWithout = "mem-without"
	nsMemWith    = "mem-with"
	nsJunk       = "junk"
)

// runMemory runs the scale-up w twice with a controller watching all namespaces: once on
// an empty cluster and once with junk unrelated Pods and Secrets, which the label-restricted
// caches should never hold.
func (b *Bench) runMemory(ctx context.Context, w Workload, junk int) (*MemoryResult, error) {
	res := &MemoryResult{Junk: junk, JunkNamespace: nsJunk}
	var err error
	b.logf("memory: %s without unrelated objects", w.Name)
	if res.Without, err = b.runOurs(ctx, w, nsMemWithout, nil, 0); err != nil {
		return nil, err
	}
	res.Without.Workload = "memory-without"
	// The second controller, watching all namespaces, must not find the first pool.
	if err := b.deletePools(ctx, nsMemWithout); err != nil {
		return nil, err
	}
	b.logf("memory: creating %d unrelated Pods and %d Secrets in %s", junk, junk, nsJunk)
	start := time.Now()
	if err := b.createJunk(ctx, junk); err != nil {
		return nil, err
	}
	res.JunkSeconds = time.Since(start).Seconds()
	b.logf("memory: %s with them (created in %.1fs)", w.Name, res.JunkSeconds)
	if res.With, err = b.runOurs(ctx, w, nsMemWith, nil, 0); err != nil {
		return nil, err
	}
	res.With.Workload = "memory-with"
	res.RSSRatio = ratio(float64(res.With.RSSBytes), float64(res.Without.RSSBytes))
	// The unrelated objects stay for the rest of the run: deleting 20 000 Pods outlasts an
	// apiserver request and costs minutes of its CPU. The timed workloads' controllers watch
	// only their own namespace, and the simulator does not serve this one; the ReplicaSet
	// controller caches every Pod of the cluster, as it does in a real one (its RSS shows it).
	return res, nil
}

// createJunk creates n small Pods and n small Secrets in nsJunk, which the simulator does
// not serve (its Pods stay Pending, unbound, as on a cluster whose nodes are elsewhere).
func (b *Bench) createJunk(ctx context.Context, n int) error {
	if err := createNamespaces(ctx, b.cluster.Client, []string{nsJunk}); err != nil {
		return err
	}
	return forEach(ctx, 2*n, 64, func(i int) error {
		meta := metav1.ObjectMeta{Name: fmt.Sprintf("junk-%05d", i/2), Namespace: nsJunk, Labels: map[string]string{"app": "unrelated"}}
		var o client.Object
		if i%2 == 0 {
			o = &corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}
		} else {
			o = &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"password": []byte(fmt.Sprintf("secret-%05d", i/2))}}
		}
		return createAll(ctx, b.cluster.Client, o)
	})
}

// deletePools deletes the ExporterSets of ns and waits until the simulated garbage
// collector has removed their Exporters, Pods and Secrets.
func (b *Bench) deletePools(ctx context.Context, ns string) error {
	if err := b.cluster.Client.DeleteAllOf(ctx, &vtv1alpha1.ExporterSet{}, client.InNamespace(ns)); err != nil {
		return err
	}
	return b.waitEmpty(ctx, ns, &vtv1alpha1.ExporterSetList{}, &jumpstarterv1alpha1.ExporterList{}, &corev1.PodList{}, &corev1.SecretList{})
}

// waitEmpty waits until ns holds no objects of these kinds.
func (b *Bench) waitEmpty(ctx context.Context, ns string, lists ...client.ObjectList) error {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	return poll(ctx, 500*time.Millisecond, func() (bool, error) {
		for _, l := range lists {
			if err := b.cluster.Client.List(ctx, l, client.InNamespace(ns), client.Limit(1)); err != nil {
				return false, err
			}
			if apimeta.LenList(l) > 0 {
				return false, nil
			}
		}
		return true, nil
	})
}
