// Package ledger is a CapacityBudget's count of what its sets hold, shared by the two
// controllers that read it: the set controller reserves a place in it before it creates an
// instance (Reserve), the budget controller allocates the places it counts. It holds no
// state: everything is counted again from the Exporters and the budget's status.
package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/budget"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/pool"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnotationRequests is written on each Exporter a budgeted set creates: its instance's Pod
// requests as the provisioner rendered them (JSON, e.g. {"cpu":"2","memory":"4Gi"}), so that
// every controller counts a budget's resources from the Exporters alone.
const AnnotationRequests = "virtualtarget.jumpstarter.dev/requests"

// ReservationGrace is how long a reservation holds its place without its Exporter: a
// controller that crashed between reserving and creating leaks it for this long at most.
// A creator never creates after half of it, so a reservation dropped for its age never has
// its Exporter appear later.
const ReservationGrace = 20 * time.Second

// RequestsOf is the requests an Exporter's annotation records (nil without, or unreadable).
func RequestsOf(e *jumpstarterv1alpha1.Exporter) corev1.ResourceList {
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

// SetNameOf is the set an Exporter belongs to: our label, else its controlling set (a pool
// upstream's controller built).
func SetNameOf(e *jumpstarterv1alpha1.Exporter) string {
	if s := e.Labels[pool.LabelSet]; s != "" {
		return s
	}
	return objects.SetOwnerOf(e)
}

// Usage is what a budget's governed sets hold: each existing Exporter of a governed set,
// plus each reservation whose Exporter does not exist yet and that is within its grace.
type Usage struct {
	Instances int32
	Resources corev1.ResourceList
	PerSet    map[string]int32 // Exporters and live reservations, by set
	PerSetRes map[string]corev1.ResourceList
	Pending   map[string]int32 // live reservations without their Exporter, by set
}

// UsageOf counts exporters (every Exporter of the namespace; those of ungoverned sets are
// skipped) and reservations at now. live are the reservations to keep: those still needed.
func UsageOf(exporters []*jumpstarterv1alpha1.Exporter, governed map[string]bool, reservations []vtv1alpha1.BudgetReservation, now time.Time) (u Usage, live []vtv1alpha1.BudgetReservation) {
	u = Usage{PerSet: map[string]int32{}, PerSetRes: map[string]corev1.ResourceList{}, Pending: map[string]int32{}}
	exists := make(map[string]bool, len(exporters))
	add := func(set string, rl corev1.ResourceList) {
		u.Instances++
		u.PerSet[set]++
		u.Resources = budget.Add(u.Resources, rl)
		u.PerSetRes[set] = budget.Add(u.PerSetRes[set], rl)
	}
	for _, e := range exporters {
		exists[e.Name] = true
		if set := SetNameOf(e); governed[set] {
			add(set, RequestsOf(e))
		}
	}
	for _, res := range reservations {
		if exists[res.Exporter] || !now.Before(res.Since.Add(ReservationGrace)) {
			continue // counted as its Exporter, or its create never came
		}
		live = append(live, res)
		if governed[res.Set] {
			add(res.Set, res.Resources)
			u.Pending[res.Set]++
		}
	}
	return u, live
}

// Selects reports whether b selects set. A selector that does not parse, or is empty
// (admission refuses both), selects nothing.
func Selects(b *vtv1alpha1.CapacityBudget, set *vtv1alpha1.ExporterSet) bool {
	sel, err := metav1.LabelSelectorAsSelector(&b.Spec.Selector)
	return err == nil && !sel.Empty() && sel.Matches(labels.Set(set.Labels))
}

// SelectedSets are the sets of b's namespace it selects, read from c, by name.
func SelectedSets(ctx context.Context, c client.Reader, b *vtv1alpha1.CapacityBudget) ([]*vtv1alpha1.ExporterSet, error) {
	var sets vtv1alpha1.ExporterSetList
	if err := c.List(ctx, &sets, client.InNamespace(b.Namespace)); err != nil {
		return nil, fmt.Errorf("listing ExporterSets: %w", err)
	}
	var out []*vtv1alpha1.ExporterSet
	for i := range sets.Items {
		if Selects(b, &sets.Items[i]) {
			out = append(out, &sets.Items[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ExportersOf lists every Exporter of the namespace through c, as pointers into the list.
func ExportersOf(ctx context.Context, c client.Reader, namespace string, opts ...client.ListOption) ([]*jumpstarterv1alpha1.Exporter, error) {
	var list jumpstarterv1alpha1.ExporterList
	if err := c.List(ctx, &list, append([]client.ListOption{client.InNamespace(namespace)}, opts...)...); err != nil {
		return nil, fmt.Errorf("listing Exporters: %w", err)
	}
	out := make([]*jumpstarterv1alpha1.Exporter, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}
