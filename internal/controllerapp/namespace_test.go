package controllerapp

import (
	"flag"
	"path/filepath"
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

// NAMESPACE as upstream's operator sets it restricts the cache and places the Lease; the
// flags win; POD_NAMESPACE still places the Lease; the local command ignores NAMESPACE.
func TestNamespacePrecedence(t *testing.T) {
	serviceAccountNamespace = filepath.Join(t.TempDir(), "absent")
	for _, tc := range []struct {
		name       string
		inCluster  bool
		args       []string
		env        map[string]string
		watch      []string
		leaseSpace string
	}{
		{"nothing", true, nil, nil, nil, ""},
		{"operator", true, nil, map[string]string{"NAMESPACE": "jumpstarter-lab"}, []string{"jumpstarter-lab"}, "jumpstarter-lab"},
		{"flag wins", true, []string{"--namespace", "a,b", "--leader-election-namespace", "c"}, map[string]string{"NAMESPACE": "x", "POD_NAMESPACE": "y"}, []string{"a", "b"}, "c"},
		{"our manifests", true, nil, map[string]string{"POD_NAMESPACE": "exporterset-system"}, nil, "exporterset-system"},
		{"NAMESPACE before POD_NAMESPACE", true, nil, map[string]string{"NAMESPACE": "x", "POD_NAMESPACE": "y"}, []string{"x"}, "x"},
		{"local command", false, nil, map[string]string{"NAMESPACE": "x"}, nil, "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("NAMESPACE", tc.env["NAMESPACE"])
			t.Setenv("POD_NAMESPACE", tc.env["POD_NAMESPACE"])
			f := parsed(t, tc.inCluster, tc.args...)
			if got := f.watchNamespaces(); !slices.Equal(got, tc.watch) {
				t.Errorf("watch %v, want %v", got, tc.watch)
			}
			if got := f.electionNamespace(); got != tc.leaseSpace {
				t.Errorf("lease namespace %q, want %q", got, tc.leaseSpace)
			}
		})
	}
}

// The gate is per provisioner; a set without its class ("") needs every Lease.
func TestProvisionerLocksGate(t *testing.T) {
	l := &provisionerLocks{names: []string{"a.example", "b.example"}, held: map[string]bool{}}
	if l.Held("a.example") || l.Held("") {
		t.Fatal("held before any lock was acquired")
	}
	l.set("a.example", true)
	if !l.Held("a.example") || l.Held("b.example") || l.Held("") {
		t.Fatalf("after a: a=%v b=%v any=%v", l.Held("a.example"), l.Held("b.example"), l.Held(""))
	}
	l.set("b.example", true)
	if !l.Held("") {
		t.Fatal("every lock held, yet the class-less gate is shut")
	}
	if was := l.set("a.example", false); !was || l.Held("a.example") || l.Held("") {
		t.Fatal("a lost, yet still held")
	}
	if ProvisionerElectionID("qemu.jumpstarter.dev") != "exporter-set-controller-qemu.jumpstarter.dev" {
		t.Fatal(ProvisionerElectionID("qemu.jumpstarter.dev"))
	}
}
