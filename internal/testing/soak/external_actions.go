package soak

import (
	"context"
	"fmt"
	"time"

	"github.com/exporterset/exporterset/internal/testing/fakeprov"
)

// Kinds of remote-side events the walk injects on the external pool, counted with the
// failure events.
const (
	FailRemoteUnreachable = "remote-unreachable"
	FailRemoteDeleted     = "remote-deleted"
	FailRemoteLeft        = "remote-left-behind"
)

// externalCatalogue lists the actions on the external pool's remote side (none without an
// external pool).
func (wk *Walk) externalCatalogue() []action {
	if wk.externalPool() == nil {
		return nil
	}
	return []action{
		{"remote-unreachable", 1, wk.remoteUnreachable},
		{"remote-delete", 1, wk.remoteDelete},
		{"remote-leave", 1, wk.remoteLeave},
	}
}

// externalPool is the pool served by the external fake.
func (wk *Walk) externalPool() *pool {
	for i := range wk.w.pools {
		if wk.w.pools[i].provisioner == fakeprov.ExternalName {
			return &wk.w.pools[i]
		}
	}
	return nil
}

// remoteUnreachable cuts the external pool's remote end for a few seconds. The set is held
// meanwhile (nothing created, nothing deleted), so it is excused from the ceiling's timers
// until a little after the cut ends.
func (wk *Walk) remoteUnreachable(context.Context) (string, bool, error) {
	if wk.f.remoteCut {
		return "", true, nil
	}
	p := wk.externalPool()
	d := time.Duration(2+wk.rng.Intn(8)) * time.Second
	wk.w.ext.SetUnreachable(true)
	wk.f.remoteCut = true
	wk.f.counts[FailRemoteUnreachable]++
	wk.w.checker.Excuse(p.set, d+excuseSlack)
	wk.later(d, "the remote end answers again", func(context.Context) error {
		wk.clearRemoteCut()
		return nil
	})
	return fmt.Sprintf("%s: the remote end is unreachable for %s", p.set, d), false, nil
}

func (wk *Walk) clearRemoteCut() {
	if wk.f.remoteCut {
		wk.w.ext.SetUnreachable(false)
		wk.f.remoteCut = false
	}
}

// remoteDelete deletes one instance's remote resource behind the reconciler's back, as a
// person or the remote side would; the reconciler must notice (Gone) and create it again.
func (wk *Walk) remoteDelete(context.Context) (string, bool, error) {
	p := wk.externalPool()
	var names []string
	for _, r := range wk.w.ext.Remotes() {
		if r.Namespace == wk.w.ns && r.Set == p.set {
			names = append(names, r.Instance)
		}
	}
	if len(names) == 0 {
		return "", true, nil
	}
	name := wk.pickName(names)
	if !wk.w.ext.DeleteRemote(wk.w.ns, name) {
		return "", true, nil
	}
	wk.f.counts[FailRemoteDeleted]++
	return fmt.Sprintf("%s: the remote resource of %s deleted behind the controller's back", p.set, name), false, nil
}

// remoteLeave leaves a remote resource for an instance that was never recorded: what a
// controller killed between the remote create and the local record leaves behind. The
// reconciler's inventory sweep must clean it up.
func (wk *Walk) remoteLeave(context.Context) (string, bool, error) {
	p := wk.externalPool()
	wk.f.leftSeq++
	name := fmt.Sprintf("%s-lost%d", p.set, wk.f.leftSeq)
	uid := fmt.Sprintf("00000000-0000-4000-8000-%012d", wk.f.leftSeq)
	r := wk.w.ext.Leave(wk.w.ns, p.set, name, uid)
	wk.f.counts[FailRemoteLeft]++
	return fmt.Sprintf("%s: %s left behind for instance %s, which no Exporter records", p.set, r.Name, name), false, nil
}
