package baremetal

import (
	"sync"
	"time"
)

// reservationTTL is how long a finished placement is remembered. It only has to outlast an
// inventory begun before the placement finished (bounded by the dial timeout plus a script),
// so a generous bound costs nothing but a short list.
const reservationTTL = 10 * time.Minute

// reservations are the placements of this process that an inventory may not show yet.
// Placement counts the instances on each host from Inventory, which reads the instances'
// metadata; two CreateExternal calls running together would otherwise both see the last free
// slot of a host, and a placement that finished just after an inventory began would be
// missed by it. A placement is counted unless the inventory shows its instance already, or it
// finished before the inventory began (its metadata is on the host then, or it failed).
type reservations struct {
	mu   sync.Mutex
	list []*reservation
}

// reservation is one placement: the host's slot key, the instance (InstanceRef.key), and
// when the create finished (zero while it runs).
type reservation struct {
	key, instance string
	done          time.Time
}

// slotKey identifies a host's slots: its address and port and the class root. Two classes
// listing the same host under the same root share its instances, as Inventory shows them;
// another root is another pool of instances.
func slotKey(h Host, root string) string { return hostAddress(h) + "\x00" + root }

// instanceKey identifies an instance in reservations and inventories.
func instanceKey(namespace, set, name string) string { return namespace + "/" + set + "/" + name }

// place chooses a host for ref with Place, counting on top of used (from an inventory begun
// at since, which showed the instances of seen) the reservations that inventory missed, and
// reserves the chosen host. The returned release marks the reservation finished; call it
// when the create returned.
func (r *reservations) place(hosts []Host, root string, ref InstanceRef, used map[string]int, seen map[string]bool, unreachable map[string]bool, since, now time.Time) (Host, func(now time.Time), error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	kept := r.list[:0]
	for _, res := range r.list {
		if res.done.IsZero() || now.Sub(res.done) < reservationTTL {
			kept = append(kept, res)
		}
	}
	clear(r.list[len(kept):])
	r.list = kept

	counted := make(map[string]int, len(used))
	for _, h := range hosts {
		counted[h.Name] = used[h.Name]
		k := slotKey(h, root)
		for _, res := range r.list {
			if res.key == k && !seen[res.instance] && (res.done.IsZero() || !res.done.Before(since)) {
				counted[h.Name]++
			}
		}
	}
	h, err := Place(hosts, counted, unreachable, "")
	if err != nil {
		return Host{}, nil, err
	}
	res := &reservation{key: slotKey(h, root), instance: instanceKey(ref.Namespace, ref.Set, ref.Name)}
	r.list = append(r.list, res)
	return h, func(now time.Time) {
		r.mu.Lock()
		defer r.mu.Unlock()
		res.done = now
	}, nil
}
