package fakeprov_test

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"

	"github.com/exporterset/exporterset/internal/testing/fakeprov"
	"github.com/exporterset/exporterset/provisioner/provisionertest"
)

// The soak judges the reconciler against this fake's remote side, so the fake itself must
// keep the ExternalProvisioner contract: the conformance kit's external checks (idempotent
// create, cleanup of an unknown instance, an inventory matching what was created, behaviour
// when unreachable).
func TestExternalConformance(t *testing.T) {
	x := fakeprov.NewExternal(fakeprov.New())
	provisionertest.Run(t, x, provisionertest.Config{
		Parameters:  `{"rev": 1}`,
		Names:       []string{fakeprov.ExternalName},
		Invalid:     []provisionertest.Invalid{{Name: "invalid", Parameters: `{"invalid": "no"}`, Fields: []string{"parameters.invalid"}}},
		Unreachable: x.SetUnreachable,
	})
}

// An unrecorded resource left behind (Leave) shows in the inventory of its set only, and
// Cleanup of the stub the reconciler's sweep rebuilds from that entry removes it.
func TestExternalLeaveInventoryCleanup(t *testing.T) {
	ctx := context.Background()
	x := fakeprov.NewExternal(fakeprov.New())
	left := x.Leave("ns", "pool", "pool-orphan", "uid-1")
	x.Leave("ns", "other", "other-1", "uid-2")
	set := &vtv1alpha1.ExporterSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "pool"}}
	req, err := provisioner.NewRequest(set, &vtv1alpha1.VirtualTargetClass{}, fakeprov.DefaultImages)
	if err != nil {
		t.Fatal(err)
	}
	inv, err := x.InventoryExternal(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(inv) != 1 || inv[0].Name != left.Name || inv[0].InstanceUID != "uid-1" {
		t.Fatalf("inventory of set pool: %+v, want only %s", inv, left.Name)
	}
	stub := &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: inv[0].Instance, UID: types.UID(inv[0].InstanceUID)}}
	if err := x.Cleanup(ctx, req.ForExporter(stub, "")); err != nil {
		t.Fatal(err)
	}
	if got := x.Remotes(); len(got) != 1 || got[0].Set != "other" {
		t.Fatalf("after cleaning up the orphan: %+v, want only set other's", got)
	}
	if !x.DeleteRemote("ns", "other-1") || x.DeleteRemote("ns", "other-1") || len(x.Remotes()) != 0 {
		t.Fatalf("DeleteRemote: %+v", x.Remotes())
	}
}
