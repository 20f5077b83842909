package exporterset_test

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// A controller killed between reserving and creating leaves reservations whose Exporters
// never come. The next controller counts them until they lapse (20 s), so the budget is
// never exceeded meanwhile, then drops them: the reservations match the Exporters again and
// the set gets the places back.
func TestBudgetReservationsOfAKilledControllerLapse(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	b := w.budget("lab", 3)
	// What the killed controller left: two places reserved, no Exporters made.
	killedAt := metav1.NewTime(time.Now().Truncate(time.Second)) // as the API server keeps it
	b.Status.Reservations = []vtv1alpha1.BudgetReservation{
		{Exporter: "pool-killed-1", Set: "pool", Since: killedAt},
		{Exporter: "pool-killed-2", Set: "pool", Since: killedAt},
	}
	if err := w.c.Status().Update(w.ctx, b); err != nil {
		t.Fatal(err)
	}
	cw := w.watchCeiling("pool", 3)
	w.controller(env.Config)
	w.set("pool", 0, 4, 3, inBudget("lab"))

	// While they stand, only one place is free.
	w.waitStatus("pool", 20*time.Second, "1 available beside the 2 reserved places", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas == 1 })
	if n := len(w.exporters("pool")); n != 1 || time.Since(killedAt.Time) > 15*time.Second {
		t.Fatalf("%d Exporters %v after the kill, want 1 while the reservations stand", n, time.Since(killedAt.Time))
	}
	// Once they lapse the set gets them back, and the reservations match the Exporters.
	w.eventually(35*time.Second, "the lapsed reservations dropped and 3 available", func() string {
		st := w.getSet("pool").Status
		got := w.getBudget("lab").Status
		if st.AvailableReplicas != 3 {
			return fmt.Sprintf("pool %s", summary(st))
		}
		existing := map[string]bool{}
		for _, e := range w.exporters("pool") {
			existing[e.Name] = true
		}
		for _, r := range got.Reservations {
			if !existing[r.Exporter] {
				return fmt.Sprintf("reservation of %s, which does not exist", r.Exporter)
			}
		}
		if got.Used.Instances != int32(len(existing)) {
			return fmt.Sprintf("used %d, %d Exporters", got.Used.Instances, len(existing))
		}
		return ""
	})
	lapsed := time.Since(killedAt.Time)
	t.Logf("the killed controller's reservations lapsed and the set was whole %v after the kill", lapsed.Round(100*time.Millisecond))
	if lapsed < 20*time.Second {
		t.Errorf("the places came back after %v, before the 20 s grace", lapsed)
	}
	cw.check(t, 3, 3)
}
