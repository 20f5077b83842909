package pool_test

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// randomInput builds a random pool and spec from a seed (shared by the invariant test and
// the fuzz target).
func randomInput(seed int64) pool.PlanInput {
	rng := rand.New(rand.NewSource(seed))
	n := rng.Intn(12)
	var instances []*pool.Instance
	for i := 0; i < n; i++ {
		var traits []fixture.Trait
		if rng.Intn(2) == 0 {
			traits = append(traits, fixture.Online)
		}
		if rng.Intn(2) == 0 {
			traits = append(traits, fixture.Registered)
		}
		if rng.Intn(3) == 0 {
			traits = append(traits, fixture.Leased(fmt.Sprint("l", i)))
		}
		switch rng.Intn(8) {
		case 0:
			traits = append(traits, fixture.Disabled)
		case 1:
			traits = append(traits, fixture.Retiring)
		case 2:
			traits = append(traits, fixture.Deleting)
		}
		if rng.Intn(4) == 0 {
			traits = append(traits, fixture.Hash("old"))
		}
		phases := []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded, corev1.PodFailed}
		for k := rng.Intn(3); k > 0; k-- {
			traits = append(traits, fixture.Pod(phases[rng.Intn(len(phases))]))
		}
		traits = append(traits, fixture.CreatedAt(time.Duration(rng.Intn(100))*time.Second))
		instances = append(instances, fixture.Instance(fmt.Sprint("i", i), traits...))
	}
	maxR := int32(rng.Intn(8))
	in := input(int32(rng.Intn(6)), maxR, int32(rng.Intn(6)), instances...)
	if maxR > 0 {
		in.MinReplicas, in.MinAvailableReplicas = min(in.MinReplicas, maxR), min(in.MinAvailableReplicas, maxR)
	}
	in.Demand = int32(rng.Intn(4))
	in.Expected = int32(rng.Intn(3))
	if rng.Intn(2) == 0 {
		in.Recycle = vtv1alpha1.RecycleInPlaceReuse
	}
	if rng.Intn(3) == 0 {
		in.Binding = vtv1alpha1.BindingWaitForFirstConsumer
	}
	if rng.Intn(2) == 0 {
		since := in.Now.Add(-time.Duration(rng.Intn(600)) * time.Second)
		in.SurplusSince = &since
	}
	for k := rng.Intn(4); k > 0; k-- {
		in.Bookings = append(in.Bookings, pool.Booking{Name: fmt.Sprint("b", k), Begin: in.Now.Add(time.Duration(rng.Intn(120)-20) * time.Second)})
	}
	pool.SortBookings(in.Bookings)
	in.LeadTime = time.Duration(rng.Intn(60)) * time.Second
	in.Others = int32(rng.Intn(3)) // strays, drawn last so earlier draws keep their meaning
	// The reuse policy (idleage.go, usecount.go), after the others for the same reason. The
	// fixtures' conditions have no transition time: every ready instance is overdue.
	if rng.Intn(2) == 0 {
		in.MaxIdleAge = 20 * time.Second
	}
	in.MaxUseCount = rng.Intn(3)
	for _, i := range instances {
		if n := rng.Intn(4); n > 0 {
			if i.Exporter.Annotations == nil {
				i.Exporter.Annotations = map[string]string{}
			}
			i.Exporter.Annotations[pool.AnnotationUseCount] = fmt.Sprint(n)
			i.Exporter.Annotations[pool.AnnotationLastLease] = "l"
			i.Exporter.Annotations[pool.AnnotationIdleSince] = fixture.Epoch.Format(time.RFC3339)
		}
	}
	return in
}

func checkPlanInvariants(t *testing.T, in pool.PlanInput, p pool.Plan) {
	t.Helper()
	for _, i := range append(append([]*pool.Instance{}, p.Retire...), p.Remove...) {
		if i.Leased() {
			t.Fatalf("plan retires or removes leased instance %s\ninput: %+v", i.Name(), in)
		}
		if i.Deleting() {
			t.Fatalf("plan acts on deleting instance %s", i.Name())
		}
	}
	if a := p.IdleAged; a != nil && (a.Leased() || !a.Available(in.Problems)) {
		t.Fatalf("rolls %s for its idle age, which is leased or not available", a.Name())
	}
	if a := p.IdleAged; a != nil && slices.Contains(p.Retire, a) {
		// It goes only when the pool can spare it: the other available instances are at
		// least the warm buffer (or the floor's unleased share). (A surplus or an excess
		// over the ceiling retired in the same plan is one fewer for it: it counts as one
		// of them.)
		var busy, stay int32
		for _, i := range in.Instances {
			if i.Leased() && !i.Deleting() {
				busy++
			}
			if i.Available(in.Problems) && i != a {
				stay++
			}
		}
		if level := max(in.MinAvailableReplicas, in.MinReplicas-busy); stay < level {
			t.Fatalf("retires %s for its idle age leaving %d available, below %d\ninput: %+v", a.Name(), stay, level, in)
		}
	}
	if len(p.UsedUp) > 0 && (in.Recycle != vtv1alpha1.RecycleInPlaceReuse || in.MaxUseCount == 0) {
		t.Fatalf("retires %d instances for their use count under %s, max-use-count %d", len(p.UsedUp), in.Recycle, in.MaxUseCount)
	}
	if p.Create < 0 {
		t.Fatalf("negative create %d", p.Create)
	}
	if p.CreateAfterRemove < 0 || p.CreateAfterRemove > int32(len(p.Remove)) || p.RemoveBeforeCreate < 0 {
		t.Fatalf("creates after removal %d (after %d gone) for %d removals", p.CreateAfterRemove, p.RemoveBeforeCreate, len(p.Remove))
	}
	if in.MaxReplicas > 0 {
		// The ceiling counts every Exporter that exists: deleting, retiring and exited ones,
		// strays and those expected. However many removals act sees gone, creating never
		// takes the set over maxReplicas.
		present := int32(len(in.Instances)) + in.Others + in.Expected
		for gone := int32(0); gone <= int32(len(p.Remove)); gone++ {
			creates := p.Create + p.CreatesAfterRemoval(gone)
			if after := present - gone + creates; creates > 0 && after > in.MaxReplicas {
				t.Fatalf("with %d present and %d removals gone the plan creates %d (%d now, %d after removal): %d Exporters, over maxReplicas %d\ninput: %+v",
					present, gone, creates, p.Create, p.CreatesAfterRemoval(gone), after, in.MaxReplicas, in)
			}
		}
	}
	due := map[string]bool{}
	for _, b := range p.Booked {
		due[b.Name] = true
		if b.Begin.Sub(in.Now) > in.LeadTime {
			t.Fatalf("booking %s counted %s before its begin, lead %s", b.Name, b.Begin.Sub(in.Now), in.LeadTime)
		}
	}
	for _, name := range p.BookedWaiting {
		if !due[name] {
			t.Fatalf("booking %s named waiting but not due", name)
		}
	}
	if len(p.BookedWaiting) > 0 && !p.Limited {
		t.Fatalf("bookings %v wait for the ceiling but the plan is not Limited", p.BookedWaiting)
	}
	if p.RequeueAfter < 0 {
		t.Fatalf("negative requeue %v", p.RequeueAfter)
	}
	if p.SurplusSince != nil && p.SurplusSince.After(in.Now.Add(time.Second)) {
		t.Fatalf("cooldown clock in the future: %v (now %v)", p.SurplusSince, in.Now)
	}
}

func FuzzPlanScale(f *testing.F) {
	for _, s := range []int64{0, 1, 42, 1 << 40} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed int64) {
		in := randomInput(seed)
		checkPlanInvariants(t, in, pool.PlanScale(in))
	})
}
