package soak

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	expool "github.com/exporterset/exporterset/exporterset/pool"
)

// Physical boards beside a set (issue 42): Exporters no set owns, their exporter process
// connected from outside the cluster (jumpsim's ConnectFromOutside), named by the set's
// hardware-selector annotation. The walk leases them and unplugs them; the checker counts
// the free ones itself (final.go: the status's hardwareAvailableReplicas and the buffer
// the set's own instances hold) and fails when the controller wrote a board.

// labelBoardFor marks a board and names the set it serves.
const labelBoardFor = "soak/board-for"

// reconcilerName is the reconciler's name (its default), the field manager of its writes.
const reconcilerName = "exporterset"

func boardSelector(set string) string { return labelBoardFor + "=" + set }

func boardNames(p *pool) []string {
	out := make([]string, p.boards)
	for i := range out {
		out[i] = fmt.Sprintf("board-%s-%d", p.set, i+1)
	}
	return out
}

// plugBoards creates p's boards and connects their processes.
func (w *world) plugBoards(ctx context.Context, p *pool) error {
	for _, name := range boardNames(p) {
		b := &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns,
			Labels: map[string]string{labelBoardFor: p.set, "kind": "physical"}}}
		if err := w.c.Create(ctx, b); err != nil {
			return fmt.Errorf("creating board %s: %w", name, err)
		}
		if err := w.sim.ConnectFromOutside(ctx, w.ns, name); err != nil {
			return err
		}
	}
	return nil
}

// isBoard reports an Exporter the soak made as a board.
func isBoard(e *jumpstarterv1alpha1.Exporter) bool { return e.Labels[labelBoardFor] != "" }

// freeBoardsOf counts, from the API server's objects, the free boards the set's
// hardware-selector annotation names: the checker's own count, by the pure rule.
func freeBoardsOf(set *vtv1alpha1.ExporterSet, exporters []jumpstarterv1alpha1.Exporter) int32 {
	v, ok := set.Annotations[exporterset.AnnotationHardwareSelector]
	if !ok {
		return 0
	}
	sel, err := labels.Parse(v)
	if err != nil {
		return 0
	}
	return int32(len(expool.FreeBoards(exporters, sel)))
}

// boardWrites lists the boards a field manager of the controller wrote: boards are read,
// never adopted, disabled, annotated or deleted.
func boardWrites(exporters []jumpstarterv1alpha1.Exporter) []string {
	var out []string
	for i := range exporters {
		e := &exporters[i]
		if !isBoard(e) {
			continue
		}
		for _, mf := range e.ManagedFields {
			if mf.Manager == reconcilerName || mf.Manager == reconcilerName+exporterset.InstanceManagerSuffix {
				out = append(out, fmt.Sprintf("board %s written by the controller (%s %s %s)", e.Name, mf.Manager, mf.Operation, mf.Subresource))
			}
		}
		if len(e.OwnerReferences) > 0 || e.DeletionTimestamp != nil || !e.IsEnabled() {
			out = append(out, fmt.Sprintf("board %s touched: owners %v, deleting %v, enabled %v", e.Name, e.OwnerReferences, e.DeletionTimestamp != nil, e.IsEnabled()))
		}
	}
	return out
}

// The walk's steps for boards.
func (wk *Walk) boardCatalogue() []action {
	return []action{
		{"board-lease", 2, wk.boardLease},
		{"board-unplug", 1, wk.boardUnplug},
	}
}

// boardLease takes a lease for a set's boards (not its instances), held 1-6 s.
func (wk *Walk) boardLease(ctx context.Context) (string, bool, error) {
	p := wk.boardedPool()
	if p == nil {
		return "", true, nil
	}
	wk.leaseSeq++
	name := fmt.Sprintf("lease-%04d-%s-board", wk.leaseSeq, p.set)
	if _, err := wk.w.sim.TakeLease(ctx, wk.w.ns, name, map[string]string{labelBoardFor: p.set}, 0); err != nil {
		return "", false, err
	}
	hold := time.Duration(1000+wk.rng.Intn(5000)) * time.Millisecond
	wk.later(hold, "release board lease "+name, func(ctx context.Context) error {
		if err := wk.w.sim.ReleaseLease(ctx, wk.w.ns, name); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	})
	return fmt.Sprintf("%s for a board of %s, held %s", name, p.set, hold), false, nil
}

// boardUnplug takes one board offline for 2-8 s, as a board unplugged or its host down.
func (wk *Walk) boardUnplug(ctx context.Context) (string, bool, error) {
	p := wk.boardedPool()
	if p == nil {
		return "", true, nil
	}
	name := wk.pickName(boardNames(p))
	if err := wk.w.sim.DisconnectFromOutside(ctx, wk.w.ns, name); err != nil {
		return "", false, err
	}
	off := time.Duration(2000+wk.rng.Intn(6000)) * time.Millisecond
	wk.later(off, "plug board "+name+" back in", func(ctx context.Context) error {
		return wk.w.sim.ConnectFromOutside(ctx, wk.w.ns, name)
	})
	return fmt.Sprintf("board %s unplugged for %s", name, off), false, nil
}

func (wk *Walk) boardedPool() *pool {
	for i := range wk.w.pools {
		if wk.w.pools[i].boards > 0 {
			return &wk.w.pools[i]
		}
	}
	return nil
}
