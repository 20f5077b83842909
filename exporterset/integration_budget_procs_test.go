package exporterset_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/internal/testing/fakeprov"
	"github.com/exporterset/exporterset/provisioner"
)

// renamed serves the fake under another provisioner name: a second controller process
// serving a provisioner the first does not.
type renamed struct {
	*fakeprov.Fake
	name string
}

func (r renamed) Describe(ctx context.Context) (provisioner.Description, error) {
	d, err := r.Fake.Describe(ctx)
	d.Names = []string{r.name}
	return d, err
}

const otherProvisioner = "other.jumpstarter.dev"

// burstWorld runs two controllers, each serving one provisioner (x's class "fake", y's
// class "other"), and, when limit > 0, a budget of limit instances over both sets.
func burstWorld(t *testing.T, limit int32) *world {
	w := newWorld(t)
	w.class("fake")
	w.class("other", func(c *vtv1alpha1.VirtualTargetClass) { c.Spec.Provisioner = otherProvisioner })
	w.controllerServing(env.Config, w.fake.Registry())
	other := provisioner.NewRegistry()
	if err := other.Register(otherProvisioner, "test", renamed{w.fake, otherProvisioner}); err != nil {
		t.Fatal(err)
	}
	w.controllerServing(env.Config, other)
	if limit > 0 {
		w.budget("lab", limit)
	}
	return w
}

// leaseBurst creates n Leases for board at once and returns how long until the last was
// assigned.
func (w *world) leaseBurst(board string, n int) (time.Duration, []*jumpstarterv1alpha1.Lease) {
	start := time.Now()
	var leases []*jumpstarterv1alpha1.Lease
	for i := range n {
		leases = append(leases, w.lease(fmt.Sprintf("%s-%d", board, i), board))
	}
	for _, l := range leases {
		w.waitAssigned(l)
	}
	return time.Since(start), leases
}

// Two controller processes serving different provisioners create for two sets of one budget
// at once: together they never hold more than the limit, counted from a watch, and a burst
// of Leases for one set is served by reclaiming the other's spares. The same burst without
// a budget is the baseline the closing note compares with.
func TestBudgetHeldAcrossTwoControllers(t *testing.T) {
	var took [2]time.Duration
	for i, limit := range []int32{6, 0} {
		name := "budget 6"
		if limit == 0 {
			name = "no budget"
		}
		t.Run(name, func(t *testing.T) {
			w := burstWorld(t, limit)
			var cw *ceilingWatch
			if limit > 0 {
				cw = w.watchExporters(setsSelector(t, "x", "y"), int(limit))
			}
			w.set("x", 0, 8, 5, inBudget("lab"))
			w.set("y", 0, 8, 3, inBudget("lab"), func(s *vtv1alpha1.ExporterSet) { s.Spec.VirtualTargetClassName = "other" })
			w.eventually(30*time.Second, "the pools settled", func() string {
				x, y := w.getSet("x").Status, w.getSet("y").Status
				if limit > 0 && x.Replicas+y.Replicas == limit && x.AvailableReplicas+y.AvailableReplicas == limit || limit == 0 && x.AvailableReplicas == 5 && y.AvailableReplicas == 3 {
					return ""
				}
				return fmt.Sprintf("x %s; y %s", summary(x), summary(y))
			})
			var leases []*jumpstarterv1alpha1.Lease
			if limit > 0 {
				t.Cleanup(func() {
					if t.Failed() {
						b := w.getBudget("lab")
						t.Logf("budget status: %+v", b.Status)
						t.Logf("x: %s", summary(w.getSet("x").Status))
						t.Logf("y: %s", summary(w.getSet("y").Status))
					}
				})
			}
			took[i], leases = w.leaseBurst("y", 5)
			t.Logf("5 Leases for y assigned within %v (%s)", took[i].Round(time.Millisecond), name)
			if limit > 0 {
				if took[i] > 10*time.Second {
					t.Errorf("the burst took %v to be served with the budget exhausted, want at most 10s", took[i])
				}
				cw.check(t, int(limit), 8)
				b := w.getBudget("lab")
				if c := apimeta.FindStatusCondition(b.Status.Conditions, vtv1alpha1.ConditionBudgetExhausted); c == nil {
					t.Errorf("the budget has no Exhausted condition: %+v", b.Status)
				}
			}
			for _, l := range leases {
				w.release(l)
			}
		})
	}
	t.Logf("lease burst to assigned: %v with the budget exhausted, %v without a budget", took[0].Round(time.Millisecond), took[1].Round(time.Millisecond))
}

// A budget on cpu: the class's runtime requests 2 cpu, the budget allows 5, so the set
// holds 2 instances whatever it wants, says why, and its Exporters record their requests.
func TestBudgetLimitsResources(t *testing.T) {
	w := newWorld(t)
	w.class("fake", func(c *vtv1alpha1.VirtualTargetClass) {
		c.Spec.Scheduling = &vtv1alpha1.Scheduling{Resources: &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}
	})
	w.controller(env.Config)
	b := &vtv1alpha1.CapacityBudget{ObjectMeta: metav1.ObjectMeta{Name: "cpu", Namespace: w.ns},
		Spec: vtv1alpha1.CapacityBudgetSpec{
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"lab": "cpu"}},
			Limits:   vtv1alpha1.BudgetLimits{Instances: 10, Resources: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("5")}},
		}}
	w.create(b)
	cw := w.watchCeiling("pool", 2)
	w.set("pool", 0, 8, 4, inBudget("cpu"))
	st := w.waitStatus("pool", 30*time.Second, "2 available, ScalingLimited by the budget", func(s vtv1alpha1.ExporterSetStatus) bool {
		c := apimeta.FindStatusCondition(s.Conditions, vtv1alpha1.ConditionScalingLimited)
		return s.AvailableReplicas == 2 && c != nil && c.Reason == string(vtv1alpha1.ReasonBudgetExhausted)
	})
	t.Logf("ScalingLimited: %s", apimeta.FindStatusCondition(st.Conditions, vtv1alpha1.ConditionScalingLimited).Message)
	time.Sleep(2 * time.Second) // nothing more may come
	for _, e := range w.exporters("pool") {
		if got := e.Annotations[exporterset.AnnotationRequests]; got != `{"cpu":"2"}` {
			t.Errorf("%s records requests %q, want {\"cpu\":\"2\"}", e.Name, got)
		}
	}
	got := w.getBudget("cpu").Status.Used
	if q := got.Resources[corev1.ResourceCPU]; got.Instances != 2 || q.Cmp(resource.MustParse("4")) != 0 {
		t.Errorf("budget used %d instances and %s cpu, want 2 and 4", got.Instances, q.String())
	}
	cw.check(t, 2, 2)
}
