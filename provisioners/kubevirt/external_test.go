package kubevirt

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/virtsim"
	"github.com/exporterset/exporterset/provisioner"
)

// create runs CreateExternal and records its annotations on the request's Exporter, as the
// reconciler does, returning the VM's reference.
func create(t *testing.T, p *Provisioner, req *provisioner.Request) types.NamespacedName {
	t.Helper()
	ann, err := p.CreateExternal(context.Background(), req)
	if err != nil {
		t.Fatalf("CreateExternal: %v", err)
	}
	req.Exporter.Annotations = ann
	ns, name, _ := strings.Cut(ann[AnnotationVM], "/")
	return types.NamespacedName{Namespace: ns, Name: name}
}

func observe(t *testing.T, p *Provisioner, req *provisioner.Request) provisioner.ExternalState {
	t.Helper()
	st, err := p.ObserveExternal(context.Background(), req)
	if err != nil {
		t.Fatalf("ObserveExternal: %v", err)
	}
	return st
}

// TestCreateExternalIdempotent: a second create (a retry, a restarted controller) finds the
// VM; the VM records set and instance.
func TestCreateExternalIdempotent(t *testing.T) {
	p := New()
	req := remoteRequest(t, `, "resources": {"cpu": 2, "memory": "3Gi"}, "cloudInit": "#cloud-config\n"`)
	ref := create(t, p, req)
	again := create(t, New(), req) // a new process: no cached client
	if ref != again {
		t.Fatalf("second create returned %s, first %s", again, ref)
	}
	vm := getVM(t, ref)
	if vm == nil {
		t.Fatal("no VM")
	}
	for k, want := range map[string]string{LabelSet: "pool", LabelSetNamespace: "lab", LabelSetUID: "set-uid-1", LabelInstance: "pool-abcde", LabelInstanceUID: "exporter-uid-1"} {
		if vm.Labels[k] != want {
			t.Errorf("label %s = %q, want %q", k, vm.Labels[k], want)
		}
	}
	if got := vm.Spec.Template.Spec.Domain.CPU.Cores; got != 2 {
		t.Errorf("cores %d", got)
	}
	if got := vm.Spec.Template.Spec.Domain.Memory.Guest.String(); got != "3Gi" {
		t.Errorf("memory %s", got)
	}
	if st := observe(t, p, req); st.Phase != provisioner.ExternalPending {
		t.Errorf("before the simulator ran: %+v, want Pending", st)
	}
}

// TestObservePendingToReady follows a VM through the simulated virt-controller.
func TestObservePendingToReady(t *testing.T) {
	p := New()
	req := remoteRequest(t, "")
	create(t, p, req)
	sim := virtsim.New(remoteClient(t))
	var phases []string
	for i := 0; i < 4; i++ {
		st := observe(t, p, req)
		phases = append(phases, string(st.Phase)+"/"+st.Reason)
		if err := sim.Step(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	want := "Pending/Creating Pending/Starting Pending/Starting Ready/"
	if got := strings.Join(phases, " "); got != want {
		t.Errorf("phases %s, want %s", got, want)
	}
}

// TestObserveFailures maps KubeVirt's failure statuses, quoting its messages.
func TestObserveFailures(t *testing.T) {
	for _, c := range []struct {
		failure virtsim.Failure
		message string
	}{
		{virtsim.FailUnschedulable, virtsim.UnschedulableMessage},
		{virtsim.FailCrashLoop, "VMI does not exist"},
	} {
		t.Run(string(c.failure), func(t *testing.T) {
			p := New()
			req := remoteRequest(t, "")
			ref := create(t, p, req)
			sim := virtsim.New(remoteClient(t))
			_ = sim.Step(context.Background()) // VMI created
			sim.Fail(ref, c.failure)
			if err := sim.Step(context.Background()); err != nil {
				t.Fatal(err)
			}
			st := observe(t, p, req)
			if st.Phase != provisioner.ExternalFailed || st.Reason != string(c.failure) || st.Message != c.message {
				t.Errorf("got %+v, want Failed %s %q", st, c.failure, c.message)
			}
		})
	}
}

// TestCleanup deletes under Delete, keeps under Retain, and is idempotent.
func TestCleanup(t *testing.T) {
	p := New()
	ctx := context.Background()
	req := remoteRequest(t, `, "dataVolume": null`)
	ref := create(t, p, req)

	req.Class.Spec.ReclaimPolicy = vtv1alpha1.ReclaimRetain
	if err := p.Cleanup(ctx, req); err != nil {
		t.Fatal(err)
	}
	if getVM(t, ref) == nil {
		t.Fatal("Retain deleted the VM")
	}
	req.Class.Spec.ReclaimPolicy = vtv1alpha1.ReclaimDelete
	for i := 0; i < 2; i++ {
		if err := p.Cleanup(ctx, req); err != nil {
			t.Fatalf("Cleanup #%d: %v", i+1, err)
		}
	}
	if getVM(t, ref) != nil {
		t.Fatal("Delete kept the VM")
	}
	if st := observe(t, p, req); st.Phase != provisioner.ExternalGone {
		t.Errorf("after cleanup: %+v, want Gone", st)
	}
	// An instance never created.
	other := remoteRequest(t, "")
	other.Exporter.Name = "never-created"
	if err := p.Cleanup(ctx, other); err != nil {
		t.Errorf("Cleanup of an unknown instance: %v", err)
	}
}

// TestInventory lists the set's VMs and only those.
func TestInventory(t *testing.T) {
	p := New()
	req := remoteRequest(t, "")
	a := create(t, p, req)
	b := req.ForExporter(req.Exporter.DeepCopy(), "")
	b.Exporter.Name, b.Exporter.UID, b.Exporter.Annotations = "pool-fghij", "exporter-uid-2", nil
	create(t, p, b)
	otherSet := req.ForExporter(req.Exporter.DeepCopy(), "")
	otherSet.Set = req.Set.DeepCopy()
	otherSet.Set.UID = "set-uid-other"
	otherSet.Exporter.Name, otherSet.Exporter.UID, otherSet.Exporter.Annotations = "pool-zzzzz", "exporter-uid-3", nil
	create(t, p, otherSet)

	inv, err := p.InventoryExternal(context.Background(), req.ForExporter(nil, ""))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range inv {
		got[r.Instance] = r.InstanceUID
		if r.Kind != "VirtualMachine" || r.Annotations[AnnotationVM] == "" {
			t.Errorf("resource %+v", r)
		}
	}
	if len(got) != 2 || got["pool-abcde"] != "exporter-uid-1" || got["pool-fghij"] != "exporter-uid-2" {
		t.Errorf("inventory %v (VM %s), want pool-abcde and pool-fghij", got, a)
	}
}

// TestUnreachableRemote: with the remote cluster cut off, every method returns a transient
// error in bounded time, and works again when it comes back.
func TestUnreachableRemote(t *testing.T) {
	p := New()
	ctx := context.Background()
	req := remoteRequest(t, "")
	create(t, p, req)
	proxy.Cut()
	defer func() {
		if err := proxy.Restore(); err != nil {
			t.Fatal(err)
		}
	}()
	start := time.Now()
	if _, err := p.ObserveExternal(ctx, req); !provisioner.IsTransient(err) {
		t.Errorf("ObserveExternal: %v, want a transient error", err)
	}
	if _, err := p.CreateExternal(ctx, req); !provisioner.IsTransient(err) {
		t.Errorf("CreateExternal: %v, want a transient error", err)
	}
	if _, err := p.InventoryExternal(ctx, req.ForExporter(nil, "")); !provisioner.IsTransient(err) {
		t.Errorf("InventoryExternal: %v, want a transient error", err)
	}
	if err := p.Cleanup(ctx, req); !provisioner.IsTransient(err) {
		t.Errorf("Cleanup: %v, want a transient error", err)
	}
	if d := time.Since(start); d > 4*remoteTimeout {
		t.Errorf("took %s", d)
	}
	if err := proxy.Restore(); err != nil {
		t.Fatal(err)
	}
	if st := observe(t, p, req); st.Phase != provisioner.ExternalPending {
		t.Errorf("after restore: %+v", st)
	}
}

// TestMissingKubeconfig: credentials without the key are the class's mistake.
func TestMissingKubeconfig(t *testing.T) {
	req := baseRequest(`{"containerDisk": "x/y:1"}`)
	req.Credentials = map[string][]byte{"other": []byte("x")}
	if _, err := New().ObserveExternal(context.Background(), req); !provisioner.IsInvalid(err) || !strings.Contains(err.Error(), `"kubeconfig"`) {
		t.Errorf("got %v", err)
	}
	req.Credentials = map[string][]byte{"kubeconfig": []byte("not: [a kubeconfig")}
	if _, err := New().CreateExternal(context.Background(), req); !provisioner.IsInvalid(err) || strings.Contains(err.Error(), "not: [a") {
		t.Errorf("got %v (must not quote the kubeconfig)", err)
	}
}
