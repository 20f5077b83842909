package exporterset

import (
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/budget"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// AnnotationRequests is written on each Exporter a budgeted set creates: its instance's Pod
// requests as the provisioner rendered them (JSON, e.g. {"cpu":"2","memory":"4Gi"}), so that
// every controller counts a budget's resources from the Exporters alone.
const AnnotationRequests = "virtualtarget.jumpstarter.dev/requests"

// reservationGrace is how long a reservation holds its place without its Exporter: a
// controller that crashed between reserving and creating leaks it for this long at most.
// A creator never creates after half of it (createDeadline), so a reservation dropped for
// its age never has its Exporter appear later.
const reservationGrace = 20 * time.Second

// requestsOf is the requests an Exporter's annotation records (nil without, or unreadable).
func requestsOf(e *jumpstarterv1alpha1.Exporter) corev1.ResourceList {
	v := e.Annotations[AnnotationRequests]
	if v == "" {
		return nil
	}
	var rl corev1.ResourceList
	if json.Unmarshal([]byte(v), &rl) != nil {
		return nil
	}
	return rl
}

// setNameOf is the set an Exporter belongs to: our label, else its controlling set (a pool
// upstream's controller built).
func setNameOf(e *jumpstarterv1alpha1.Exporter) string {
	if s := e.Labels[pool.LabelSet]; s != "" {
		return s
	}
	return setOwnerOf(e)
}

// usage is what a budget's governed sets hold: each existing Exporter of a governed set,
// plus each reservation whose Exporter does not exist yet and that is within its grace.
type usage struct {
	instances int32
	resources corev1.ResourceList
	perSet    map[string]int32 // Exporters and live reservations, by set
	perSetRes map[string]corev1.ResourceList
	pending   map[string]int32 // live reservations without their Exporter, by set
}

// usageOf counts exporters (every Exporter of the namespace; those of ungoverned sets are
// skipped) and reservations at now. live are the reservations to keep: those still needed.
func usageOf(exporters []*jumpstarterv1alpha1.Exporter, governed map[string]bool, reservations []vtv1alpha1.BudgetReservation, now time.Time) (u usage, live []vtv1alpha1.BudgetReservation) {
	u = usage{perSet: map[string]int32{}, perSetRes: map[string]corev1.ResourceList{}, pending: map[string]int32{}}
	exists := make(map[string]bool, len(exporters))
	add := func(set string, rl corev1.ResourceList) {
		u.instances++
		u.perSet[set]++
		u.resources = budget.Add(u.resources, rl)
		u.perSetRes[set] = budget.Add(u.perSetRes[set], rl)
	}
	for _, e := range exporters {
		exists[e.Name] = true
		if set := setNameOf(e); governed[set] {
			add(set, requestsOf(e))
		}
	}
	for _, res := range reservations {
		if exists[res.Exporter] || !now.Before(res.Since.Add(reservationGrace)) {
			continue // counted as its Exporter, or its create never came
		}
		live = append(live, res)
		if governed[res.Set] {
			add(res.Set, res.Resources)
			u.pending[res.Set]++
		}
	}
	return u, live
}

func resourceZero() *resource.Quantity { return resource.NewQuantity(0, resource.DecimalSI) }
