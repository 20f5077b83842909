package pool_test

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// now in these tests is Epoch+1h (input's); quarantined(-d) was quarantined d before it.
func quarantined(name string, ago time.Duration, traits ...fixture.Trait) *pool.Instance {
	return fixture.Instance(name, append([]fixture.Trait{fixture.Ready, fixture.Quarantined(time.Hour - ago)}, traits...)...)
}

func TestInstanceQuarantine(t *testing.T) {
	q := quarantined("q", time.Minute)
	if !q.Quarantined() || q.DisabledByPerson() || q.Enabled() {
		t.Fatalf("quarantined instance: quarantined=%t disabledByPerson=%t enabled=%t", q.Quarantined(), q.DisabledByPerson(), q.Enabled())
	}
	if got, want := q.QuarantinedAt(), fixture.Epoch.Add(59*time.Minute); !got.Equal(want) {
		t.Fatalf("QuarantinedAt = %v, want %v", got, want)
	}
	back := quarantined("b", time.Minute)
	back.Exporter.Spec.Enabled = nil // a person took it back into service
	if back.Quarantined() || back.DisabledByPerson() {
		t.Fatalf("re-enabled instance: quarantined=%t disabledByPerson=%t", back.Quarantined(), back.DisabledByPerson())
	}
	// Enabled again by a person, then retired by the set: its old mark does not keep it.
	retired := quarantined("r", time.Minute)
	retired.Exporter.Annotations[pool.AnnotationRetiring] = fixture.Epoch.Format(time.RFC3339)
	if retired.Quarantined() || !retired.Retiring() {
		t.Fatalf("retired instance with an old mark: quarantined=%t retiring=%t", retired.Quarantined(), retired.Retiring())
	}
	if got := summarize(pool.PlanScale(input(0, 3, 1, retired, fixture.Instance("a", fixture.Ready)))); fmt.Sprint(got.Remove) != "[r]" {
		t.Fatalf("plan %+v: want the retired instance with an old mark removed", got)
	}
	hand := fixture.Instance("h", fixture.Disabled)
	hand.Exporter.Annotations = map[string]string{pool.AnnotationQuarantined: "by hand"}
	if !hand.QuarantinedAt().IsZero() {
		t.Fatalf("unreadable mark gives %v, want the zero time", hand.QuarantinedAt())
	}
	for _, c := range []struct {
		v    jumpstarterv1alpha1.ExporterStatusValue
		want bool
	}{
		{jumpstarterv1alpha1.ExporterStatusAfterLeaseHookFailed, true},
		{jumpstarterv1alpha1.ExporterStatusBeforeLeaseHookFailed, true},
		{jumpstarterv1alpha1.ExporterStatusAfterLeaseHook, false},
		{jumpstarterv1alpha1.ExporterStatusAvailable, false},
		{"", false},
	} {
		if got := fixture.Instance("x", fixture.ExporterStatus(c.v, "m")).HookFailed(); got != c.want {
			t.Errorf("HookFailed with %q = %t, want %t", c.v, got, c.want)
		}
	}
}

func TestPlanQuarantine(t *testing.T) {
	const ttl, grace = 30 * time.Minute, 3 * time.Second
	type want struct {
		Remove                      []string
		Expired, OverCap, ForLeases int32
		Kept                        int32
		RequeueAfter                time.Duration
	}
	cases := []struct {
		name      string
		instances []*pool.Instance
		maxKept   int
		demand    int32
		maxR      int32
		want      want
	}{
		{
			name:      "one kept until its TTL",
			instances: []*pool.Instance{quarantined("q", time.Minute), fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.Ready)},
			maxKept:   1, maxR: 4,
			want: want{Kept: 1, RequeueAfter: 29 * time.Minute},
		},
		{
			name:      "TTL ran out",
			instances: []*pool.Instance{quarantined("q", 31*time.Minute), fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.Ready)},
			maxKept:   1, maxR: 4,
			want: want{Remove: []string{"q"}, Expired: 1},
		},
		{
			name:      "leased (inspected with allowDisabled): kept past its TTL",
			instances: []*pool.Instance{quarantined("q", 31*time.Minute, fixture.Leased("look")), fixture.Instance("a", fixture.Ready)},
			maxKept:   1, maxR: 4,
			want: want{Kept: 1},
		},
		{
			name: "over the cap: the oldest go first",
			instances: []*pool.Instance{quarantined("new", time.Minute), quarantined("old", 10*time.Minute), quarantined("mid", 5*time.Minute),
				fixture.Instance("a", fixture.Ready)},
			maxKept: 1, maxR: 6,
			want: want{Remove: []string{"old", "mid"}, OverCap: 2, Kept: 1, RequeueAfter: 29 * time.Minute},
		},
		{
			name:      "over the cap, the oldest leased: the next oldest goes",
			instances: []*pool.Instance{quarantined("new", time.Minute), quarantined("old", 10*time.Minute, fixture.Leased("look"))},
			maxKept:   1, maxR: 6,
			want: want{Remove: []string{"new"}, OverCap: 1, Kept: 1}, // the lease's end wakes the set
		},
		{
			name:      "max 0: removed once the grace has passed",
			instances: []*pool.Instance{quarantined("q", 5*time.Second), fixture.Instance("a", fixture.Ready)},
			maxKept:   0, maxR: 4,
			want: want{Remove: []string{"q"}, OverCap: 1},
		},
		{
			name:      "max 0: within the grace, kept and looked at again when it ends",
			instances: []*pool.Instance{quarantined("q", time.Second), fixture.Instance("a", fixture.Ready)},
			maxKept:   0, maxR: 4,
			want: want{Kept: 1, RequeueAfter: 2 * time.Second},
		},
		{
			name: "a lease waits and the ceiling blocks its instance: the quarantined one goes",
			instances: []*pool.Instance{quarantined("q", time.Minute), fixture.Instance("a", fixture.Ready, fixture.Leased("l1")),
				fixture.Instance("b", fixture.Ready, fixture.Leased("l2")), fixture.Instance("c", fixture.Ready, fixture.Leased("l3"))},
			maxKept: 1, maxR: 4, demand: 1,
			want: want{Remove: []string{"q"}, ForLeases: 1},
		},
		{
			name: "the ceiling blocks only the buffer, no lease waits: kept",
			instances: []*pool.Instance{quarantined("q", time.Minute), fixture.Instance("a", fixture.Ready, fixture.Leased("l1")),
				fixture.Instance("b", fixture.Ready, fixture.Leased("l2")), fixture.Instance("c", fixture.Ready, fixture.Leased("l3"))},
			maxKept: 1, maxR: 4,
			want: want{Kept: 1, RequeueAfter: 29 * time.Minute},
		},
		{
			name: "a lease waits but there is room under the ceiling: kept",
			instances: []*pool.Instance{quarantined("q", time.Minute), fixture.Instance("a", fixture.Ready, fixture.Leased("l1")),
				fixture.Instance("b", fixture.Ready)},
			maxKept: 1, maxR: 6, demand: 1,
			want: want{Kept: 1, RequeueAfter: 29 * time.Minute},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := input(0, c.maxR, 2, c.instances...)
			in.Recycle = vtv1alpha1.RecycleInPlaceReuse
			in.Demand = c.demand
			got := pool.PlanQuarantine(pool.QuarantineInput{Scale: in, TTL: ttl, MaxKept: c.maxKept, Grace: grace})
			g := want{Remove: fixture.Names(got.Remove), Expired: got.Expired, OverCap: got.OverCap, ForLeases: got.ForLeases, Kept: got.Kept, RequeueAfter: got.RequeueAfter}
			if c.want.Remove == nil {
				c.want.Remove = []string{}
			}
			if d := cmp.Diff(c.want, g); d != "" {
				t.Fatalf("PlanQuarantine (-want +got):\n%s", d)
			}
		})
	}
}

// A quarantined instance counts against the ceiling, not towards the buffer: a replacement
// is created beside it, within maxReplicas; it is never retired, rolled or restarted.
func TestPlanScaleQuarantined(t *testing.T) {
	q := quarantined("q", time.Minute, fixture.Hash("old"))
	q.Pods[0].Status.Phase = corev1.PodFailed // onFailure exit: its exporter exited 1
	in := input(0, 4, 2, q, fixture.Instance("a", fixture.Ready))
	in.Recycle = vtv1alpha1.RecycleInPlaceReuse
	p := pool.PlanScale(in)
	if got := summarize(p); got.Create != 1 || len(got.Retire)+len(got.Remove)+len(got.RestartPods) > 0 {
		t.Fatalf("plan %+v: want one create beside the quarantined instance, and nothing done to it", got)
	}
	// At the ceiling the quarantined one holds its place: nothing is created until it goes.
	in = input(0, 3, 2, q, fixture.Instance("a", fixture.Ready), fixture.Instance("b", fixture.Ready, fixture.Leased("l")))
	p = pool.PlanScale(in)
	if p.Create != 0 || p.CeilingBlocked != 1 {
		t.Fatalf("at the ceiling: create %d, blocked %d; want 0 and 1", p.Create, p.CeilingBlocked)
	}
	in.RemoveQuarantined = []*pool.Instance{q}
	p = pool.PlanScale(in)
	if got := summarize(p); fmt.Sprint(got.Remove) != "[q]" || got.CreateAfterRemove != 1 || p.CeilingBlocked != 0 {
		t.Fatalf("removing it: %+v (blocked %d); want q removed and its replacement after", got, p.CeilingBlocked)
	}
}

// The plan's invariants hold with quarantined instances and PlanQuarantine's removals, and
// PlanQuarantine never removes a leased instance, one within its grace, or one it keeps.
func TestPlanQuarantineInvariants(t *testing.T) {
	for seed := int64(0); seed < 3000; seed++ {
		in := randomInput(seed)
		rng := rand.New(rand.NewSource(seed))
		for k := rng.Intn(4); k > 0; k-- {
			traits := []fixture.Trait{fixture.Quarantined(time.Hour - time.Duration(rng.Intn(3600))*time.Second)}
			if rng.Intn(3) == 0 {
				traits = append(traits, fixture.Leased(fmt.Sprint("look", k)))
			}
			if rng.Intn(2) == 0 {
				traits = append(traits, fixture.Pod(corev1.PodFailed))
			}
			in.Instances = append(in.Instances, fixture.Instance(fmt.Sprint("q", k), traits...))
		}
		if in.MaxReplicas > 0 && int32(len(in.Instances)) > in.MaxReplicas+3 {
			continue
		}
		qin := pool.QuarantineInput{Scale: in, TTL: time.Duration(rng.Intn(1800)) * time.Second, MaxKept: rng.Intn(3), Grace: 3 * time.Second}
		qp := pool.PlanQuarantine(qin)
		for _, i := range qp.Remove {
			if i.Leased() || !i.Quarantined() || in.Now.Before(i.QuarantinedAt().Add(qin.Grace)) {
				t.Fatalf("seed %d: removes %s (leased %t, quarantined at %v)", seed, i.Name(), i.Leased(), i.QuarantinedAt())
			}
		}
		if qp.RequeueAfter < 0 || int(qp.Expired+qp.OverCap+qp.ForLeases) != len(qp.Remove) {
			t.Fatalf("seed %d: %+v", seed, qp)
		}
		in.RemoveQuarantined = qp.Remove
		p := pool.PlanScale(in)
		checkPlanInvariants(t, in, p)
		removed := map[*pool.Instance]bool{}
		for _, i := range qp.Remove {
			removed[i] = true
		}
		for _, list := range [][]*pool.Instance{p.Retire, p.RestartPods, p.StartPods, p.Remove} {
			for _, i := range list {
				if i.Quarantined() && !removed[i] {
					t.Fatalf("seed %d: the plan acts on kept quarantined instance %s: %+v", seed, i.Name(), summarize(p))
				}
			}
		}
	}
}
