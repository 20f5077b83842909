//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/e2e/prom"
	"github.com/exporterset/exporterset/internal/testing/testproc"
)

// A failure an alert must report: how the set or its class is broken from the start, the
// Degraded reason its failures are counted with, and the fix.
type alertingFailure struct {
	reason  vtv1alpha1.ConditionReason
	breakIt func(cls *vtv1alpha1.VirtualTargetClass, set *vtv1alpha1.ExporterSet)
	fix     func(t *testing.T, ns, name string)
	// notAvailable: the set also reports the pool not available (ExporterSetNotAvailable
	// is checked on this one).
	notAvailable bool
	// scaleUp: the failure is persistent rather than a crash (the instance is kept, not
	// replaced, so it counts once). Once its reason's series exists, the set is scaled up to
	// 5 instances that all fail: the alert counts increases, and a series first appears
	// already counting its first failures (docs/e2e.md, "Alerts").
	scaleUp bool
}

var (
	imageAbsent = alertingFailure{
		reason: vtv1alpha1.ReasonImagePullFailed,
		breakIt: func(_ *vtv1alpha1.VirtualTargetClass, set *vtv1alpha1.ExporterSet) {
			set.Spec.Images = &vtv1alpha1.Images{Runtime: &vtv1alpha1.ImageSpec{Image: "127.0.0.1:5/absent:1", ImagePullPolicy: corev1.PullIfNotPresent}}
		},
		fix:          fixRuntimeImage,
		notAvailable: true,
		scaleUp:      true,
	}
	runtimeCrashing = alertingFailure{
		reason: vtv1alpha1.ReasonTargetCrashing,
		breakIt: func(_ *vtv1alpha1.VirtualTargetClass, set *vtv1alpha1.ExporterSet) {
			set.Spec.Images = &vtv1alpha1.Images{Runtime: &vtv1alpha1.ImageSpec{Image: "e2e.local/qemu-runtime:crash"}}
		},
		fix: fixRuntimeImage,
	}
	tooMuchCPU = alertingFailure{
		reason: vtv1alpha1.ReasonUnschedulable,
		breakIt: func(cls *vtv1alpha1.VirtualTargetClass, _ *vtv1alpha1.ExporterSet) {
			cls.Spec.Scheduling.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("64")
		},
		fix: func(t *testing.T, ns, name string) {
			patchNamed(t, ns, name, &vtv1alpha1.VirtualTargetClass{}, func(o client.Object) {
				o.(*vtv1alpha1.VirtualTargetClass).Spec.Scheduling.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("100m")
			})
		},
		scaleUp: true,
	}
)

func fixRuntimeImage(t *testing.T, ns, name string) {
	patchNamed(t, ns, name, &vtv1alpha1.ExporterSet{}, func(o client.Object) {
		o.(*vtv1alpha1.ExporterSet).Spec.Images = &vtv1alpha1.Images{Runtime: &vtv1alpha1.ImageSpec{Image: "e2e.local/qemu-runtime:e2e"}}
	})
}

// alertFailure breaks a set of its own (class and set named name) from its creation:
// ExporterSetFailuresRising must fire for its reason (and ExporterSetNotAvailable where
// marked), and both resolve once it is fixed and the pool is Available.
func alertFailure(t *testing.T, st *prom.Stack, ns, name string, f alertingFailure) {
	cls, set := namedPool(ns, name)
	f.breakIt(cls, set)
	caused := time.Now()
	createAll(t, cls, set)
	setLabels := map[string]string{"namespace": ns, "exporterset": name}
	keys := []alertKey{{"ExporterSetFailuresRising", map[string]string{"namespace": ns, "exporterset": name, "reason": string(f.reason)}}}
	if f.notAvailable {
		keys = append(keys, alertKey{"ExporterSetNotAvailable", setLabels})
	}
	if f.scaleUp {
		failures := fmt.Sprintf(`sum(exporterset_instance_failures_total{namespace=%q, exporterset=%q, reason=%q})`, ns, name, f.reason)
		testproc.WaitFor(t, 2*time.Minute, "the first failure counted ("+failures+")", func() (bool, string) {
			v, err := st.Query(ctx, failures)
			return err == nil && len(v) == 1 && v[0].Value >= 1, fmt.Sprintf("%v %v", v, err)
		})
		t.Logf("%s: first failure counted after %.1f s; scaling up to 5 instances", name, time.Since(caused).Seconds())
		scale(t, ns, name, 5, 5)
	}
	waitFiring(t, st, caused, 3*time.Minute, keys...)
	if f.scaleUp {
		// The fix lands on a set that has made its instances: a class changed while its
		// Pods were being created once left one Pod with the old requests (64 CPUs) that was
		// never rolled (exporterset_outdated_replicas 0), so the pool never recovered.
		testproc.WaitFor(t, time.Minute, name+"'s 5 Pods", func() (bool, string) {
			n := 0
			for _, p := range podsOf(t, ns) {
				if p.Labels["virtualtarget.jumpstarter.dev/exporterset"] == name && p.DeletionTimestamp == nil {
					n++
				}
			}
			return n == 5, fmt.Sprintf("%d Pods", n)
		})
	}
	fixed := time.Now()
	f.fix(t, ns, name)
	waitResolved(t, st, fixed, 3*time.Minute, keys...)
	waitAvailable(t, ns, name)
}

// starvation is how long the budget scenario's leases wait before the fix: past
// ExporterSetLeaseWaitHigh's 120 s (the 95th percentile of lease waits; its threshold is not
// a chart value) and ExporterSetBookedLeaseLate's 60 s.
const starvation = 125 * time.Second

// alertBudget: a CapacityBudget of 2 instances over two sets. Two leases on one set take
// its instance and, by a reclaim, the other set's idle one (exporterset_budget_reclaims_total);
// then a lease, and one booked to begin 3 s later, wait with nothing left to reclaim:
// ExporterSetBudgetStarving fires. After starvation the fix raises the limit; both leases are
// served, the one too late for its waiting time (ExporterSetLeaseWaitHigh), the booked one
// too late for its beginTime (ExporterSetBookedLeaseLate), and all three alerts resolve.
func alertBudget(t *testing.T, st *prom.Stack, ns string) {
	budget := &vtv1alpha1.CapacityBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "lab", Namespace: ns},
		Spec: vtv1alpha1.CapacityBudgetSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"budget": "lab"}},
			Limits:   vtv1alpha1.BudgetLimits{Instances: 2},
		},
	}
	cls, busy := namedPool(ns, "busy")
	_, idle := namedPool(ns, "idle")
	idle.Spec.VirtualTargetClassName = cls.Name
	idle.Spec.MaxReplicas = ptr.To[int32](1)
	busy.Spec.MaxReplicas = ptr.To[int32](4)
	for _, s := range []*vtv1alpha1.ExporterSet{busy, idle} {
		s.Labels = map[string]string{"budget": "lab"}
	}
	createAll(t, budget, cls, busy, idle)
	waitAvailable(t, ns, busy.Name)
	waitAvailable(t, ns, idle.Name)
	sel := busy.Spec.Selector.MatchLabels
	leases := []*jsv1.Lease{takeLease(t, ns, sel), takeLease(t, ns, sel)}
	starving := alertKey{"ExporterSetBudgetStarving", map[string]string{"namespace": ns, "budget": budget.Name}}
	// The second lease waited for the reclaim: its episode must be over before the third.
	waitInactive(t, st, time.Minute, starving)
	caused := time.Now()
	waiting := createLease(t, ns, sel)
	booked := &jsv1.Lease{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-booked-", Namespace: ns},
		Spec: jsv1.LeaseSpec{ClientRef: corev1.LocalObjectReference{Name: "e2e"},
			Selector: metav1.LabelSelector{MatchLabels: sel}, Duration: &metav1.Duration{Duration: 30 * time.Minute},
			BeginTime: &metav1.Time{Time: caused.Add(3 * time.Second)}},
	}
	createAll(t, booked)
	waitFiring(t, st, caused, 2*time.Minute, starving)
	time.Sleep(time.Until(caused.Add(starvation)))
	fixed := time.Now()
	patchNamed(t, ns, budget.Name, &vtv1alpha1.CapacityBudget{}, func(o client.Object) {
		o.(*vtv1alpha1.CapacityBudget).Spec.Limits.Instances = 6
	})
	waitLeaseAssigned(t, waiting, 2*time.Minute)
	waitLeaseAssigned(t, booked, 2*time.Minute)
	if b := booked.Status.BeginTime; b != nil {
		t.Logf("the waiting lease was assigned after %s; the booked one began %s after its beginTime",
			time.Since(waiting.CreationTimestamp.Time).Round(time.Second), b.Sub(booked.Spec.BeginTime.Time))
	}
	setLabels := map[string]string{"namespace": ns, "exporterset": busy.Name}
	late := []alertKey{{"ExporterSetLeaseWaitHigh", setLabels}, {"ExporterSetBookedLeaseLate", setLabels}}
	// The late leases' alerts fire while the starving one resolves.
	awaitAlerts(t, st, time.Minute, late, caused, []alertKey{starving}, fixed)
	waitResolved(t, st, fixed, 2*time.Minute, late...)
	for _, l := range append(leases, waiting, booked) {
		releaseLease(t, l)
	}
}

// alertQuarantines: a class whose afterLease hook fails (onFailure endLease; the stand-in
// exporter runs the hook as upstream's does), so every instance is quarantined after its
// lease. Three leases, three quarantines: ExporterSetQuarantinesRepeating fires. The fix
// removes the hook.
func alertQuarantines(t *testing.T, st *prom.Stack, ns string) {
	cls, set := namedPool(ns, "hooks")
	cls.Spec.Parameters = &apiextensionsv1.JSON{Raw: []byte(`{"arch":"x86_64","resources":{"cpu":1,"memory":"256Mi","storage":"1Gi"},` +
		// The exporter image has no shell; its stand-in cp fails on these arguments (exit 1).
		`"hooks":{"afterLease":{"exec":"/usr/bin/cp","script":"no-such-file","onFailure":"endLease"}}}`)}
	set.Spec.MinAvailableReplicas = 2
	set.Spec.MaxReplicas = ptr.To[int32](3)
	createAll(t, cls, set)
	waitAvailable(t, ns, set.Name)
	caused := time.Now()
	total := fmt.Sprintf(`sum(exporterset_quarantines_total{namespace=%q, exporterset=%q})`, ns, set.Name)
	for i := 1; i <= 3; i++ {
		l := takeLease(t, ns, set.Spec.Selector.MatchLabels)
		// Released only once its exporter serves it: a lease that ends before the exporter
		// has seen it begin runs no afterLease hook.
		waitExporterStatus(t, ns, l.Status.ExporterRef.Name, jsv1.ExporterStatusLeaseReady)
		releaseLease(t, l)
		testproc.WaitFor(t, time.Minute, fmt.Sprintf("quarantine %d (%s)", i, total), func() (bool, string) {
			v, err := st.Query(ctx, total)
			return err == nil && len(v) == 1 && v[0].Value >= float64(i), fmt.Sprintf("%v %v", v, err)
		})
	}
	key := alertKey{"ExporterSetQuarantinesRepeating", map[string]string{"namespace": ns, "exporterset": set.Name}}
	waitFiring(t, st, caused, 2*time.Minute, key)
	fixed := time.Now()
	patchNamed(t, ns, cls.Name, &vtv1alpha1.VirtualTargetClass{}, func(o client.Object) {
		o.(*vtv1alpha1.VirtualTargetClass).Spec.Parameters = &apiextensionsv1.JSON{Raw: []byte(`{"arch":"x86_64","resources":{"cpu":1,"memory":"256Mi","storage":"1Gi"}}`)}
	})
	waitResolved(t, st, fixed, 3*time.Minute, key)
	waitAvailable(t, ns, set.Name)
}

// scale sets the set's warm buffer and ceiling.
func scale(t *testing.T, ns, name string, minAvailable, max int32) {
	t.Helper()
	patchNamed(t, ns, name, &vtv1alpha1.ExporterSet{}, func(o client.Object) {
		s := o.(*vtv1alpha1.ExporterSet)
		s.Spec.MinAvailableReplicas, s.Spec.MaxReplicas = minAvailable, ptr.To(max)
	})
}

// namedPool is smallPool with the class and the set both called name, and name as the
// board label, so that several pools share a namespace.
func namedPool(ns, name string) (*vtv1alpha1.VirtualTargetClass, *vtv1alpha1.ExporterSet) {
	cls, set := smallPool(ns, name)
	cls.Name, set.Name, set.Spec.VirtualTargetClassName = name, name, name
	return cls, set
}

func createAll(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
}
