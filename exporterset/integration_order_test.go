package exporterset_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// Finish before you start: in a scale-up of N, the first instance's Pod is created before
// the (N/2)-th Exporter. The order is the API server's own: the resourceVersion of each
// object's ADDED event is the etcd revision of its create, read from watches opened before
// the set exists (creationTimestamps have whole seconds only).
func TestFirstInstanceFinishedBeforeHalfBegun(t *testing.T) {
	const n = 40
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)

	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	rec := newCreateRecorder()
	ctx, cancel := context.WithCancel(w.ctx)
	defer cancel()
	rec.follow(t, ctx, wc, w.ns, &jumpstarterv1alpha1.ExporterList{}, "exporter")
	rec.follow(t, ctx, wc, w.ns, &corev1.PodList{}, "pod")

	w.set("pool", n, n, 0)
	w.waitStatus("pool", 90*time.Second, fmt.Sprintf("%d available", n), func(s vtv1alpha1.ExporterSetStatus) bool {
		return s.AvailableReplicas == n
	})
	w.eventually(10*time.Second, "every create seen on the watches", func() string {
		if e, p := rec.count("exporter"), rec.count("pod"); e < n || p < n {
			return fmt.Sprintf("%d Exporter and %d Pod creates seen", e, p)
		}
		return ""
	})

	exporters := rec.ordered("exporter")
	first := exporters[0]
	firstPod, ok := rec.revision("pod", first.name)
	if !ok {
		t.Fatalf("no Pod create seen for the first instance %s", first.name)
	}
	half := exporters[n/2-1]
	begunBefore := 0
	for _, e := range exporters {
		if e.rev < firstPod {
			begunBefore++
		}
	}
	t.Logf("first instance %s: Exporter at revision %d, Pod at %d; %d Exporters created before its Pod; Exporter %d (%s) at %d",
		first.name, first.rev, firstPod, begunBefore, n/2, half.name, half.rev)
	if firstPod > half.rev {
		t.Fatalf("the first instance's Pod (revision %d) was created after the %d-th Exporter (%s, revision %d): %d Exporters were begun before it was finished",
			firstPod, n/2, half.name, half.rev, begunBefore)
	}
}

// createRecorder keeps the revision at which each object was created, per kind.
type createRecorder struct {
	mu  sync.Mutex
	rev map[string]map[string]int64 // kind -> name -> revision of its ADDED event
}

type created struct {
	name string
	rev  int64
}

func newCreateRecorder() *createRecorder {
	return &createRecorder{rev: map[string]map[string]int64{}}
}

// follow watches list's kind in ns from now on (the list's resourceVersion) until ctx ends.
func (r *createRecorder) follow(t *testing.T, ctx context.Context, c client.WithWatch, ns string, list client.ObjectList, kind string) {
	t.Helper()
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	wi, err := c.Watch(ctx, list.DeepCopyObject().(client.ObjectList), client.InNamespace(ns),
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()}})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		defer wi.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-wi.ResultChan():
				if !ok {
					return
				}
				o, isObj := ev.Object.(client.Object)
				if ev.Type != watch.Added || !isObj {
					continue
				}
				rv, err := strconv.ParseInt(o.GetResourceVersion(), 10, 64)
				if err != nil {
					continue
				}
				r.mu.Lock()
				if r.rev[kind] == nil {
					r.rev[kind] = map[string]int64{}
				}
				if _, seen := r.rev[kind][o.GetName()]; !seen {
					r.rev[kind][o.GetName()] = rv
				}
				r.mu.Unlock()
			}
		}
	}()
}

func (r *createRecorder) count(kind string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.rev[kind])
}

func (r *createRecorder) revision(kind, name string) (int64, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rv, ok := r.rev[kind][name]
	return rv, ok
}

// ordered returns the objects of kind in the order they were created.
func (r *createRecorder) ordered(kind string) []created {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []created
	for name, rv := range r.rev[kind] {
		out = append(out, created{name, rv})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rev < out[j].rev })
	return out
}
