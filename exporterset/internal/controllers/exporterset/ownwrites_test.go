package exporterset

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/state"
)

func TestOwnWritesReadYourOwnStatus(t *testing.T) {
	at := func(rv string, seq int64) *vtv1alpha1.ExporterSet {
		return &vtv1alpha1.ExporterSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pool", UID: "u1", ResourceVersion: rv},
			Status:     vtv1alpha1.ExporterSetStatus{InstanceSequence: seq},
		}
	}
	o := ownWrites{state.Register[ownWrite](state.NewMemory(), "own")}
	if got := o.latest(at("1", 0)); got.ResourceVersion != "1" {
		t.Fatalf("nothing written: got version %s", got.ResourceVersion)
	}

	written := at("2", 5)
	o.wrote("1", written)
	written.Status.InstanceSequence = 99 // the caller's object may change later; the memory must not
	got := o.latest(at("1", 0))
	if got.ResourceVersion != "2" || got.Status.InstanceSequence != 5 {
		t.Fatalf("cache still at the replaced version: got version %s sequence %d, want the write (2, 5)", got.ResourceVersion, got.Status.InstanceSequence)
	}
	got.Status.InstanceSequence = 7 // a pass changes its copy
	if again := o.latest(at("1", 0)); again.Status.InstanceSequence != 5 {
		t.Fatalf("a pass's changes leaked into the memory: sequence %d", again.Status.InstanceSequence)
	}

	other := at("1", 0)
	other.UID = "u2" // deleted and recreated under the same name
	if got := o.latest(other); got.UID != "u2" {
		t.Fatalf("a recreated set got the old one's write")
	}

	if got := o.latest(at("3", 6)); got.ResourceVersion != "3" {
		t.Fatalf("cache moved on: got version %s, want the cached 3", got.ResourceVersion)
	}
	if got := o.latest(at("1", 0)); got.ResourceVersion != "1" {
		t.Fatalf("memory kept after the cache moved on: got version %s", got.ResourceVersion)
	}
}
