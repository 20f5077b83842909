package soak

import (
	"strings"
	"testing"
	"time"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/internal/testing/fakeprov"
)

// The final check finds the external fake's remote resources that no Exporter owns (left
// behind by a crash between create and record, or by a retirement whose cleanup was
// skipped), also one whose Exporter's name lives on under another UID, and a recorded
// Exporter whose remote resource is gone; it accepts a resource its Exporter holds.
func TestFinalDetectsOrphanedRemoteResources(t *testing.T) {
	b := newBench(t)
	x := fakeprov.NewExternal(fakeprov.New())
	b.checker.WatchRemote(x.Remotes)
	set := b.set("ext", 3)
	record := func(e *jumpstarterv1alpha1.Exporter) {
		r := x.Leave(b.ns, set.Name, e.Name, string(e.UID))
		b.patch(e, func(e *jumpstarterv1alpha1.Exporter) {
			e.Annotations = map[string]string{
				exporterset.AnnotationExternalRecorded: time.Now().UTC().Format(time.RFC3339),
				fakeprov.AnnotationRemote:              r.Name,
			}
		})
	}
	held := b.exporter("ext-1", set, "")
	record(held)
	lost := b.exporter("ext-2", set, "")
	record(lost)
	x.DeleteRemote(b.ns, lost.Name)
	left := x.Leave(b.ns, set.Name, "ext-lost1", "00000000-0000-4000-8000-000000000001")
	stale := x.Leave(b.ns, set.Name, held.Name, "a-former-uid")
	x.Leave("another-namespace", set.Name, "elsewhere", "uid")

	joined := b.final()
	for _, want := range []string{
		"orphaned remote resource " + left.Name + " of set ext",
		"orphaned remote resource " + stale.Name + " of set ext: no Exporter ext-1 with UID a-former-uid",
		"instance ext-2 recorded its remote resource",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("the final check missed %q", want)
		}
	}
	for _, never := range []string{"elsewhere", "instance ext-1 "} {
		if strings.Contains(joined, never) {
			t.Errorf("the final check reported %q, which is right", never)
		}
	}
}
