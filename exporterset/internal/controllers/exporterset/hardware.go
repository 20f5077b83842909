package exporterset

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// AnnotationHardwareSelector, on an ExporterSet or its VirtualTargetClass (the set's wins),
// is a label selector in `kubectl -l` form (board=rpi4,lab/kind=physical) naming physical
// boards: Exporters no pool owns that serve the same Leases as the set's instances. Free
// boards count toward the set's warm buffer (pool.FreeBoards), and the set never writes
// them. An annotation, so that it works under upstream's ExporterSet CRD too.
const AnnotationHardwareSelector = "virtualtarget.jumpstarter.dev/hardware-selector"

// hardwareSelectorOf reads the hardware selector from the set's annotations, then the
// class's (cls may be nil). It is nil without the annotation; a value that does not parse blocks the
// set, naming the annotation and where it is: counted wrongly, boards would starve leases
// or keep instances nobody needs.
func hardwareSelectorOf(set *vtv1alpha1.ExporterSet, cls *vtv1alpha1.VirtualTargetClass) (labels.Selector, *blocker) {
	v, ok := set.Annotations[AnnotationHardwareSelector]
	on := "ExporterSet"
	if !ok && cls != nil {
		v, ok = cls.Annotations[AnnotationHardwareSelector]
		on = "VirtualTargetClass"
	}
	if !ok {
		return nil, nil
	}
	sel, err := labels.Parse(v)
	switch {
	case err != nil:
		return nil, blocked(vtv1alpha1.ReasonInvalidSelector, "annotation %s=%q on the %s: %v", AnnotationHardwareSelector, v, on, err)
	case sel.Empty():
		return nil, blocked(vtv1alpha1.ReasonInvalidSelector, "annotation %s=%q on the %s: an empty selector would count every Exporter of the namespace as a board", AnnotationHardwareSelector, v, on)
	}
	return sel, nil
}

// observeBoards lists, from the cache, the free boards sel names in the set's namespace, and
// says why leases may not go to them first (hardware_policy.go); instance are the labels the
// set's instances carry.
func (r *Reconciler) observeBoards(ctx context.Context, set *vtv1alpha1.ExporterSet, sel labels.Selector, instance labels.Set) (free []string, note string, err error) {
	if sel == nil {
		return nil, "", nil
	}
	var list jumpstarterv1alpha1.ExporterList
	if err := r.client.List(ctx, &list, client.InNamespace(set.Namespace), client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, "", fmt.Errorf("listing boards: %w", err)
	}
	return pool.FreeBoards(list.Items, sel), r.boardPolicyNote(ctx, set, list.Items, instance), nil
}

// boardsNote is what the Available message says of the boards counted toward the buffer.
func boardsNote(boards []string, minAvailable int32) string {
	n := len(boards)
	if n == 0 {
		return ""
	}
	subject, shown, more := "boards count", boards, ""
	if n == 1 {
		subject = "board counts"
	}
	if n > 5 {
		shown, more = boards[:5], ", ..."
	}
	return fmt.Sprintf("; %d free %s toward the buffer of %d (%s%s)", n, subject, minAvailable, strings.Join(shown, ", "), more)
}

// boardEvents passes the events of Exporters no set owns (a board, or one that was): the
// set's own Exporters, most of the events, stop here before they are compared or mapped.
var boardEvents = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return ofNoSet(e.Object) },
	DeleteFunc:  func(e event.DeleteEvent) bool { return ofNoSet(e.Object) },
	UpdateFunc:  func(e event.UpdateEvent) bool { return ofNoSet(e.ObjectOld) || ofNoSet(e.ObjectNew) },
	GenericFunc: func(e event.GenericEvent) bool { return ofNoSet(e.Object) },
}

func ofNoSet(o client.Object) bool {
	e, ok := o.(*jumpstarterv1alpha1.Exporter)
	return ok && !objects.OfASet(e)
}

// setsOfBoard maps an Exporter no set owns to the sets of its namespace whose hardware
// selector names it: a board taken, freed, disabled or gone changes their buffer.
func (r *Reconciler) setsOfBoard(ctx context.Context, o client.Object) []reconcile.Request {
	e, ok := o.(*jumpstarterv1alpha1.Exporter)
	if !ok {
		return nil
	}
	var sets vtv1alpha1.ExporterSetList
	if err := r.client.List(ctx, &sets, client.InNamespace(e.Namespace)); err != nil {
		return nil
	}
	return requestsFor(sets.Items, func(s *vtv1alpha1.ExporterSet) bool {
		var cls *vtv1alpha1.VirtualTargetClass
		if _, ok := s.Annotations[AnnotationHardwareSelector]; !ok {
			var c vtv1alpha1.VirtualTargetClass
			if r.client.Get(ctx, client.ObjectKey{Namespace: s.Namespace, Name: s.Spec.VirtualTargetClassName}, &c) != nil {
				return false
			}
			cls = &c
		}
		sel, _ := hardwareSelectorOf(s, cls)
		return sel != nil && sel.Matches(labels.Set(e.Labels))
	})
}
