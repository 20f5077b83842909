// Command whatif shows the library's pure scaling math without a cluster: it builds a pool of
// instances in memory (ready, leased, starting) and prints the status the reconciler would
// report (pool.ComputeStatus) and what it would do next (pool.PlanScale) for a
// given spec. Capacity planning ("how many instances would a lease storm of 20 add with a
// ceiling of 30?") and tests of a controller built on the library use the same two calls.
//
// With -budget it prints instead what a CapacityBudget decides (budget.Allocate) for two
// sets sharing a limit: set a settled at its warm buffer of 3 idle instances, set b with one
// leased instance and -budget-waiting Leases waiting, as in the check.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
)

func main() {
	var in pool.PlanInput
	var ready, leased, starting int
	flag.IntVar(&ready, "ready", 2, "idle instances, ready to serve")
	flag.IntVar(&leased, "leased", 1, "instances serving a lease")
	flag.IntVar(&starting, "starting", 0, "instances whose Pod is not ready yet")
	minR := flag.Int("min-replicas", 0, "spec.minReplicas")
	maxR := flag.Int("max-replicas", 0, "spec.maxReplicas (0: no ceiling)")
	buffer := flag.Int("min-available", 2, "spec.minAvailableReplicas (the warm buffer)")
	demand := flag.Int("waiting-leases", 0, "Leases waiting for an exporter of this pool")
	showBudget := flag.Bool("budget", false, "print a budget's decision for two sets instead")
	budgetLimit := flag.Int("budget-limit", 4, "with -budget: the budget's limits.instances")
	budgetWaiting := flag.Int("budget-waiting", 2, "with -budget: Leases waiting for set b")
	flag.Parse()
	if *showBudget {
		budgetWhatIf(os.Stdout, twoSets(int32(*budgetLimit), int32(*budgetWaiting), time.Now()))
		return
	}
	in.MinReplicas, in.MaxReplicas, in.MinAvailableReplicas, in.Demand = int32(*minR), int32(*maxR), int32(*buffer), int32(*demand)
	whatIf(os.Stdout, in, ready, leased, starting)
}

// whatIf builds the pool and prints its status and plan.
func whatIf(w io.Writer, in pool.PlanInput, ready, leased, starting int) {
	in.Now, in.SpecHash = time.Now(), "current"
	for i := 0; i < ready+leased+starting; i++ {
		in.Instances = append(in.Instances, instance(i, i < ready+leased, i >= ready && i < ready+leased))
	}
	st := pool.ComputeStatus(in.Instances, in.Problems)
	fmt.Fprintf(w, "status: replicas=%d available=%d leased=%d unavailable=%d\n", st.Replicas, st.AvailableReplicas, st.LeasedReplicas, st.UnavailableReplicas)
	plan := pool.PlanScale(in)
	fmt.Fprintf(w, "plan: want=%d create=%d retire=%d limited=%v\n", plan.Wanted, plan.Create, len(plan.Retire), plan.Limited)
}

// instance is an Exporter of the current spec with a Pod; a ready one is online and
// registered (as the Jumpstarter controller reports it), a leased one holds a lease.
func instance(i int, ready, leased bool) *pool.Instance {
	e := &jumpstarterv1alpha1.Exporter{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pool-%d", i), Namespace: "lab", UID: types.UID(fmt.Sprint("uid-", i)),
			Labels: map[string]string{pool.LabelSpecHash: "current"}},
		Spec: jumpstarterv1alpha1.ExporterSpec{Enabled: ptr.To(true)},
	}
	phase := corev1.PodPending
	if ready {
		phase = corev1.PodRunning
		for _, c := range []string{jumpstarterv1alpha1.ExporterConditionOnline, jumpstarterv1alpha1.ExporterConditionRegistered} {
			e.Status.Conditions = append(e.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: "Connected"})
		}
	}
	if leased {
		e.Status.LeaseRef = &corev1.LocalObjectReference{Name: fmt.Sprint("lease-", i)}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: e.Name, Namespace: e.Namespace}, Status: corev1.PodStatus{Phase: phase}}
	return &pool.Instance{Exporter: e, Pods: []*corev1.Pod{pod}}
}
