package jumpsim

import (
	"context"
	"fmt"
	"sort"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// Which Exporter a waiting Lease gets: the candidates, and the reservations that keep two
// leases off one Exporter while the cache lags behind the scheduler's own writes.

// Unsatisfiable messages, upstream's words (lease_controller.go at b1f2bb41).
const (
	msgNoAccess         = "While there are %d exporters matching the selector, none of them are approved by any policy for your client"
	msgAllDisabled      = "All %d exporters matching the selector are disabled"
	msgExporterNotFound = "Requested exporter %s was not found"
	msgSelectorMismatch = "Requested exporter %s does not match selector %s"
	msgExporterDisabled = "Requested exporter %s is disabled. To lease a disabled exporter, set spec.allowDisabled: true on the Lease, or use --allow-disabled with jmp create lease"
)

// pinned reports whether l asks for one Exporter by name (spec.exporterRef).
func pinned(l *jsv1.Lease) bool { return l.Spec.ExporterRef != nil && l.Spec.ExporterRef.Name != "" }

// candidates lists, from the cache, the Exporters a lease may get, sorted by name, or says
// why it never can (reason and message of Unsatisfiable), in upstream's order: a pinned
// lease's Exporter must exist, match a non-empty selector and be enabled unless the lease
// allows disabled ones; a selector's matches are its enabled Exporters, and none enabled
// among several is AllDisabled, none at all NoAccess. From the cache they are shallow copies
// sharing maps and slices with it (every waiting lease looks at every Exporter on every
// change, so deep copies would dominate at scale): read them, never modify them.
func (sc *scheduler) candidates(ctx context.Context, l *jsv1.Lease, sel labels.Selector) ([]jsv1.Exporter, string, string, error) {
	if pinned(l) {
		name := l.Spec.ExporterRef.Name
		var ex jsv1.Exporter
		err := sc.s.client.Get(ctx, types.NamespacedName{Namespace: l.Namespace, Name: name}, &ex)
		switch {
		case apierrors.IsNotFound(err):
			return nil, ReasonExporterNotFound, fmt.Sprintf(msgExporterNotFound, name), nil
		case err != nil:
			return nil, "", "", err
		case !sel.Empty() && !sel.Matches(labels.Set(ex.Labels)):
			return nil, ReasonSelectorMismatch, fmt.Sprintf(msgSelectorMismatch, name, metav1.FormatLabelSelector(&l.Spec.Selector)), nil
		case !ex.IsEnabled() && !l.Spec.AllowDisabled:
			return nil, ReasonExporterDisabled, fmt.Sprintf(msgExporterDisabled, name), nil
		}
		return []jsv1.Exporter{ex}, "", "", nil
	}
	var list jsv1.ExporterList
	if err := sc.s.client.List(ctx, &list, client.InNamespace(l.Namespace), client.MatchingLabelsSelector{Selector: sel}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, "", "", err
	}
	matching := len(list.Items)
	out := list.Items[:0]
	for _, ex := range list.Items {
		if ex.IsEnabled() { // whatever spec.allowDisabled says, as upstream
			out = append(out, ex)
		}
	}
	switch {
	case len(out) == 0 && matching > 0:
		return nil, ReasonAllDisabled, fmt.Sprintf(msgAllDisabled, matching), nil
	case len(out) == 0:
		return nil, ReasonNoAccess, fmt.Sprintf(msgNoAccess, 0), nil
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, "", "", nil
}

// leasedInCache returns the Exporters (name -> UID, empty when unknown) that the cache shows
// held by another lease that has not ended.
func (sc *scheduler) leasedInCache(ctx context.Context, l *jsv1.Lease) (map[string][]types.UID, error) {
	var list jsv1.LeaseList
	if err := sc.s.client.List(ctx, &list, client.InNamespace(l.Namespace), client.MatchingFields{indexLeaseActive: "true"}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := map[string][]types.UID{}
	for i := range list.Items {
		o := &list.Items[i]
		if o.Name == l.Name || o.Status.Ended || o.Status.ExporterRef == nil {
			continue
		}
		uid, _, _ := controllerUID(o, "Exporter")
		out[o.Status.ExporterRef.Name] = append(out[o.Status.ExporterRef.Name], uid)
	}
	return out, nil
}

// pick chooses the first free, online and ready candidate by name and reserves it for l, or
// says why the lease has to wait.
func (sc *scheduler) pick(l *jsv1.Lease, candidates []jsv1.Exporter, leasedInCache map[string][]types.UID) (*jsv1.Exporter, string, string) {
	var online []*jsv1.Exporter
	for i := range candidates {
		ex := &candidates[i]
		if ex.DeletionTimestamp == nil &&
			meta.IsStatusConditionTrue(ex.Status.Conditions, jsv1.ExporterConditionRegistered) &&
			meta.IsStatusConditionTrue(ex.Status.Conditions, jsv1.ExporterConditionOnline) {
			online = append(online, ex)
		}
	}
	if len(online) == 0 {
		return nil, ReasonOffline, fmt.Sprintf("While there are %d available exporters (i.e. %s), none of them are online", len(candidates), candidates[0].Name)
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	free, ready := 0, 0
	var chosen *jsv1.Exporter
	for _, ex := range online {
		if sc.leasedLocked(l, ex, leasedInCache) {
			continue
		}
		free++
		switch ex.Status.ExporterStatusValue {
		case "", jsv1.ExporterStatusUnspecified, jsv1.ExporterStatusAvailable:
		default:
			continue // still busy, e.g. cleaning up after its previous lease
		}
		ready++
		if chosen == nil {
			chosen = ex
		}
	}
	switch {
	case free == 0:
		return nil, ReasonNotAvailable, fmt.Sprintf("There are %d approved exporters, (i.e. %s) but all of them are already leased", len(online), online[0].Name)
	case ready == 0:
		return nil, ReasonNotReady, fmt.Sprintf("There are %d online exporters, but none are ready (still cleaning up previous lease)", free)
	}
	key := client.ObjectKeyFromObject(chosen)
	sc.byExporter[key] = reservation{lease: l.Name, uid: chosen.UID}
	sc.byLease[client.ObjectKeyFromObject(l)] = key
	return chosen.DeepCopy(), "", "" // it will be written to
}

func (sc *scheduler) leasedLocked(l *jsv1.Lease, ex *jsv1.Exporter, leasedInCache map[string][]types.UID) bool {
	if r, ok := sc.byExporter[client.ObjectKeyFromObject(ex)]; ok && r.uid == ex.UID && r.lease != l.Name {
		return true
	}
	if ex.Status.LeaseRef != nil && ex.Status.LeaseRef.Name != l.Name {
		return true
	}
	for _, uid := range leasedInCache[ex.Name] {
		if uid == "" || uid == ex.UID {
			return true
		}
	}
	return false
}

// adopt records an assignment found in the apiserver (made before a restart, or by a pass
// whose reservation was dropped).
func (sc *scheduler) adopt(exKey types.NamespacedName, lease string, uid types.UID) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if r, ok := sc.byExporter[exKey]; ok && r.lease != lease && r.uid == uid {
		sc.s.record("scheduler", ActionAnomaly, "Exporter", exKey.Namespace, exKey.Name, "assigned to lease %s while reserved for lease %s", lease, r.lease)
	}
	sc.byExporter[exKey] = reservation{lease: lease, uid: uid}
	sc.byLease[types.NamespacedName{Namespace: exKey.Namespace, Name: lease}] = exKey
}

// unreserve drops the reservation of lease, if it still holds one.
func (sc *scheduler) unreserve(leaseKey types.NamespacedName) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	exKey, ok := sc.byLease[leaseKey]
	if !ok {
		return
	}
	delete(sc.byLease, leaseKey)
	if r, ok := sc.byExporter[exKey]; ok && r.lease == leaseKey.Name {
		delete(sc.byExporter, exKey)
	}
}
