package soak

import (
	"fmt"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/internal/testing/fakeprov"
)

// WatchRemote gives the checker the external fake's remote side, whose resources the final
// invariants compare with the Exporters (remoteProblems). Without it they are not judged.
func (c *Checker) WatchRemote(list func() []fakeprov.Remote) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.remotes = list
}

func (c *Checker) remoteList() []fakeprov.Remote {
	c.mu.Lock()
	list := c.remotes
	c.mu.Unlock()
	if list == nil {
		return nil
	}
	return list()
}

// remoteProblems is the "no orphan remote resources once settled" invariant of the
// namespace ns, both ways: every remote resource belongs to an existing Exporter of the
// same name and UID (one created just before a crash, or left by a retired instance, must
// have been swept or cleaned up), and every live Exporter that recorded its remote
// resource still has one (one deleted behind the controller's back is created again).
func remoteProblems(ns string, exporters []jumpstarterv1alpha1.Exporter, remotes []fakeprov.Remote) []string {
	type key struct{ name, uid string }
	exists := map[key]bool{}
	for _, e := range exporters {
		exists[key{e.Name, string(e.UID)}] = true
	}
	held := map[key]bool{}
	var problems []string
	for _, r := range remotes {
		if r.Namespace != ns {
			continue
		}
		held[key{r.Instance, r.InstanceUID}] = true
		if !exists[key{r.Instance, r.InstanceUID}] {
			problems = append(problems, fmt.Sprintf("orphaned remote resource %s of set %s: no Exporter %s with UID %s exists", r.Name, r.Set, r.Instance, r.InstanceUID))
		}
	}
	for _, e := range exporters {
		if e.DeletionTimestamp != nil || e.Annotations[exporterset.AnnotationExternalRecorded] == "" {
			continue
		}
		if !held[key{e.Name, string(e.UID)}] {
			problems = append(problems, fmt.Sprintf("instance %s recorded its remote resource %s, which no longer exists", e.Name, e.Annotations[fakeprov.AnnotationRemote]))
		}
	}
	return problems
}
