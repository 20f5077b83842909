package controllerapp

import (
	"flag"
	"slices"
	"testing"
)

func parsed(t *testing.T, inCluster bool, args ...string) *Flags {
	t.Helper()
	var f Flags
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	f.Register(fs, inCluster)
	if err := Parse(fs, args); err != nil {
		t.Fatal(err)
	}
	return &f
}

// NAMESPACE as upstream's operator sets it restricts the cache; the flags win; the local
// command ignores NAMESPACE.
func TestNamespacePrecedence(t *testing.T) {
	for _, tc := range []struct {
		name      string
		inCluster bool
		args      []string
		env       string
		watch     []string
	}{
		{"nothing", true, nil, "", nil},
		{"operator", true, nil, "jumpstarter-lab", []string{"jumpstarter-lab"}},
		{"flag wins", true, []string{"--namespace", "a,b"}, "x", []string{"a", "b"}},
		{"local command", false, nil, "x", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("NAMESPACE", tc.env)
			f := parsed(t, tc.inCluster, tc.args...)
			if got := f.watchNamespaces(); !slices.Equal(got, tc.watch) {
				t.Errorf("watch %v, want %v", got, tc.watch)
			}
		})
	}
}

// The gate is per namespace and provisioner: a served provisioner has upstream's Lease name,
// anything else (a set without its class, "", or an unknown provisioner) the set-wide one;
// nothing is held before it was acquired, and a lock held in one namespace opens no other.
func TestProvisionerLocksGate(t *testing.T) {
	l := &provisionerLocks{served: map[string]bool{"a.example": true, "b.example": true}, setWide: DefaultElectionID, held: map[lockKey]bool{}}
	if l.Held("ns1", "a.example") || l.Held("ns1", "") {
		t.Fatal("held before any lock was acquired")
	}
	if len(l.held) != 0 {
		t.Fatalf("campaigns recorded before Run: %v", l.held)
	}
	l.set(lockKey{"ns1", ProvisionerElectionID("a.example")}, true)
	if !l.Held("ns1", "a.example") || l.Held("ns2", "a.example") || l.Held("ns1", "b.example") || l.Held("ns1", "") {
		t.Fatalf("after a in ns1: a/ns1=%v a/ns2=%v b/ns1=%v none/ns1=%v", l.Held("ns1", "a.example"), l.Held("ns2", "a.example"), l.Held("ns1", "b.example"), l.Held("ns1", ""))
	}
	l.set(lockKey{"ns1", DefaultElectionID}, true)
	if !l.Held("ns1", "") || !l.Held("ns1", "unknown.example") || l.Held("ns2", "") {
		t.Fatal("the set-wide lock of ns1 does not gate ns1's sets without a served provisioner alone")
	}
	if was := l.set(lockKey{"ns1", ProvisionerElectionID("a.example")}, false); !was || l.Held("ns1", "a.example") {
		t.Fatal("a lost, yet still held")
	}
	if ProvisionerElectionID("qemu.jumpstarter.dev") != "exporter-set-controller-qemu.jumpstarter.dev" {
		t.Fatal(ProvisionerElectionID("qemu.jumpstarter.dev"))
	}
}
