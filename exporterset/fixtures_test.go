package exporterset

import (
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// fixture builds an Instance for pure tests: a name and a list of traits.
type trait func(*pool.Instance)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func instance(name string, traits ...trait) *pool.Instance {
	in := &pool.Instance{Exporter: &jumpstarterv1alpha1.Exporter{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
			Labels: map[string]string{pool.LabelSpecHash: "h1"}, CreationTimestamp: metav1.NewTime(epoch)},
		Spec: jumpstarterv1alpha1.ExporterSpec{Enabled: ptr.To(true)},
	}}
	for _, t := range traits {
		t(in)
	}
	return in
}

func setCond(in *pool.Instance, typ string) {
	in.Exporter.Status.Conditions = append(in.Exporter.Status.Conditions, metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: "Sim"})
}

var (
	online     trait = func(in *pool.Instance) { setCond(in, jumpstarterv1alpha1.ExporterConditionOnline) }
	registered trait = func(in *pool.Instance) { setCond(in, jumpstarterv1alpha1.ExporterConditionRegistered) }
	disabled   trait = func(in *pool.Instance) { in.Exporter.Spec.Enabled = ptr.To(false) }
	retiring   trait = func(in *pool.Instance) {
		in.Exporter.Annotations = map[string]string{pool.AnnotationRetiring: epoch.Format(time.RFC3339)}
		in.Exporter.Spec.Enabled = ptr.To(false)
	}
	deleting trait = func(in *pool.Instance) { in.Exporter.DeletionTimestamp = ptr.To(metav1.NewTime(epoch)) }
)

// ready is online and registered, with a running Pod.
var ready trait = func(in *pool.Instance) { online(in); registered(in); pod(corev1.PodRunning)(in) }

func leased(lease string) trait {
	return func(in *pool.Instance) { in.Exporter.Status.LeaseRef = &corev1.LocalObjectReference{Name: lease} }
}

func pod(phase corev1.PodPhase) trait {
	return func(in *pool.Instance) {
		in.Pods = append(in.Pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", in.Name(), len(in.Pods)), Namespace: "ns"},
			Status:     corev1.PodStatus{Phase: phase},
		})
	}
}

func hash(h string) trait {
	return func(in *pool.Instance) { in.Exporter.Labels[pool.LabelSpecHash] = h }
}

func createdAt(d time.Duration) trait {
	return func(in *pool.Instance) { in.Exporter.CreationTimestamp = metav1.NewTime(epoch.Add(d)) }
}

func names(in []*pool.Instance) []string {
	out := []string{}
	for _, i := range in {
		out = append(out, i.Name())
	}
	return out
}

// fixtureProblems holds the Problems the withProblem trait gives fixture instances, by
// instance (a pointer: each fixture is a fresh one). An Instance carries no Problem of its
// own; problemsOf collects a pool's for the functions that take them.
var fixtureProblems sync.Map

func withProblem(pr *pool.Problem) trait {
	return func(in *pool.Instance) { fixtureProblems.Store(in, pr) }
}

// problemsOf is what diagnosis would have found for the fixture instances.
func problemsOf(instances []*pool.Instance) pool.Problems {
	out := pool.Problems{}
	for _, in := range instances {
		if pr, ok := fixtureProblems.Load(in); ok {
			out[in.Exporter.UID] = pr.(*pool.Problem)
		}
	}
	return out
}

// observeFixtures is failureMemory.observe with the fixture instances' problems.
func observeFixtures(m failureMemory, key, version string, now time.Time, instances []*pool.Instance, base, limit time.Duration) pool.Backoff {
	return m.observe(key, version, now, instances, problemsOf(instances), base, limit)
}
