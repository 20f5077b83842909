package kubevirt

import (
	"fmt"
	"strings"
	"testing"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/internal/testing/virtsim"
	"github.com/exporterset/exporterset/provisioner/provisionertest"
)

// An external pool end to end, ExitAndReplace and Delete: instances reach available with
// their VMs, a lease is served, the leased instance's VM goes with it, an unreachable remote
// is reported without deleting anything, an orphan VM is swept, and the set's deletion leaves
// no VM behind.
func TestPoolOfExternalTargets(t *testing.T) {
	p := newPool(t, vtv1alpha1.RecycleExitAndReplace, vtv1alpha1.ReclaimDelete)
	p.waitAvailable(2)
	for _, e := range p.exporters() {
		if !hasString(e.Finalizers, exporterset.FinalizerExternal) || e.Annotations[AnnotationVM] == "" {
			t.Errorf("exporter %s: finalizers %v annotations %v: the external lifecycle is not recorded", e.Name, e.Finalizers, e.Annotations)
		}
	}

	// A VM that fails (KubeVirt's CrashLoopBackOff): reported with KubeVirt's reason, and
	// its instance replaced.
	failed := p.exporters()[0].Name
	failedVM := p.vms()[failed]
	p.vs.Fail(types.NamespacedName{Namespace: failedVM.Namespace, Name: failedVM.Name}, virtsim.FailCrashLoop)
	p.eventually(30*time.Second, "an ExternalTargetFailed event quoting KubeVirt", func() string {
		var events eventsv1.EventList
		if err := p.c.List(p.ctx, &events, client.InNamespace(p.ns)); err != nil {
			return err.Error()
		}
		for _, e := range events.Items {
			if e.Reason == string(vtv1alpha1.ReasonExternalTargetFailed) && strings.Contains(e.Note, "CrashLoopBackOff") && strings.Contains(e.Note, failed) {
				return ""
			}
		}
		var rs []string
		for _, e := range events.Items {
			rs = append(rs, e.Reason+": "+e.Note)
		}
		return fmt.Sprintf("none yet; events %v", rs)
	})
	p.eventually(30*time.Second, "the failed instance's VM deleted", func() string {
		if _, ok := p.vms()[failed]; ok {
			return "still there"
		}
		return ""
	})
	p.waitAvailable(2)

	leased := p.lease("l1")
	if err := p.sim.ReleaseLease(p.ctx, p.ns, "l1"); err != nil {
		t.Fatal(err)
	}
	p.eventually(30*time.Second, "the leased instance's VM deleted (ExitAndReplace)", func() string {
		if _, ok := p.vms()[leased]; ok {
			return "VM of " + leased + " still there"
		}
		return ""
	})
	p.waitAvailable(2)

	// The remote end unreachable while a lease is held: reported, nothing deleted.
	held := p.lease("l2")
	before := len(p.exporters())
	proxy.Cut()
	p.eventually(30*time.Second, "RemoteUnreachable", func() string {
		c := apimeta.FindStatusCondition(p.status().Conditions, vtv1alpha1.ConditionDegraded)
		if c == nil || c.Reason != string(vtv1alpha1.ReasonRemoteUnreachable) {
			return fmt.Sprintf("Degraded %+v", c)
		}
		return ""
	})
	time.Sleep(2 * time.Second) // several passes while cut off
	if after := len(p.exporters()); after != before {
		t.Errorf("%d exporters before the remote was cut off, %d after", before, after)
	}
	if a := apimeta.FindStatusCondition(p.status().Conditions, vtv1alpha1.ConditionAvailable); a == nil || a.Status != metav1.ConditionFalse {
		t.Errorf("Available while the remote end is unreachable: %+v", a)
	}
	if err := proxy.Restore(); err != nil {
		t.Fatal(err)
	}
	var e jumpstarterv1alpha1.Exporter
	if err := p.c.Get(p.ctx, types.NamespacedName{Namespace: p.ns, Name: held}, &e); err != nil || e.Status.LeaseRef == nil {
		t.Errorf("the leased instance %s after the cut: %v %v", held, err, e.Status.LeaseRef)
	}
	p.waitAvailable(2)

	// A VM created for an instance that never got recorded (the controller was killed
	// between the remote create and the local record, and the Exporter is gone since): the
	// inventory sweep removes it.
	var set vtv1alpha1.ExporterSet
	if err := p.c.Get(p.ctx, types.NamespacedName{Namespace: p.ns, Name: "pool"}, &set); err != nil {
		t.Fatal(err)
	}
	orphanReq := remoteRequestFor(t, p, &set, "pool-orphan1", "uid-orphan-1")
	if _, err := New().CreateExternal(p.ctx, orphanReq); err != nil {
		t.Fatal(err)
	}
	p.eventually(30*time.Second, "the orphan VM swept", func() string {
		if _, ok := p.vms()["pool-orphan1"]; ok {
			return "orphan VM still there"
		}
		return ""
	})

	// The set's deletion leaves nothing behind remotely.
	if err := p.c.Delete(p.ctx, &set); err != nil {
		t.Fatal(err)
	}
	p.eventually(60*time.Second, "no VM and no Exporter left", func() string {
		if n := len(p.vms()); n > 0 {
			return fmt.Sprintf("%d VMs left", n)
		}
		if n := len(p.exporters()); n > 0 {
			return fmt.Sprintf("%d Exporters left", n)
		}
		return ""
	})
}

// The same pool through the plugin binary and the real host (protocol version 2): instances
// reach available with their VMs, a served lease's VM goes with it, and the set's deletion
// leaves no VM behind.
func TestPoolThroughPlugin(t *testing.T) {
	plug := provisionertest.LoadPlugin(t, provisionertest.BuildPlugin(t, "", "../../cmd/exporterset-provisioner-kubevirt", "kubevirt"))
	p := newPoolWith(t, vtv1alpha1.RecycleExitAndReplace, vtv1alpha1.ReclaimDelete, plug.Provisioner())
	p.waitAvailable(2)
	leased := p.lease("l1")
	if err := p.sim.ReleaseLease(p.ctx, p.ns, "l1"); err != nil {
		t.Fatal(err)
	}
	p.eventually(30*time.Second, "the leased instance's VM deleted", func() string {
		if _, ok := p.vms()[leased]; ok {
			return "VM of " + leased + " still there"
		}
		return ""
	})
	var set vtv1alpha1.ExporterSet
	if err := p.c.Get(p.ctx, types.NamespacedName{Namespace: p.ns, Name: "pool"}, &set); err != nil {
		t.Fatal(err)
	}
	if err := p.c.Delete(p.ctx, &set); err != nil {
		t.Fatal(err)
	}
	p.eventually(60*time.Second, "no VM and no Exporter left", func() string {
		if n, m := len(p.vms()), len(p.exporters()); n+m > 0 {
			return fmt.Sprintf("%d VMs, %d Exporters left", n, m)
		}
		return ""
	})
}

// InPlaceReuse keeps an instance's VM across leases; Retain keeps the VMs of retired
// instances.
func TestPoolInPlaceReuseAndRetain(t *testing.T) {
	p := newPool(t, vtv1alpha1.RecycleInPlaceReuse, vtv1alpha1.ReclaimRetain)
	p.waitAvailable(2)
	leased := p.lease("l1")
	vmUID := p.vms()[leased].UID
	if err := p.sim.ReleaseLease(p.ctx, p.ns, "l1"); err != nil {
		t.Fatal(err)
	}
	p.waitAvailable(2)
	time.Sleep(2 * time.Second)
	if vm, ok := p.vms()[leased]; !ok || vm.UID != vmUID {
		t.Errorf("InPlaceReuse replaced the VM of %s (kept=%v)", leased, ok)
	}

	var set vtv1alpha1.ExporterSet
	if err := p.c.Get(p.ctx, types.NamespacedName{Namespace: p.ns, Name: "pool"}, &set); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range p.exporters() {
		names[e.Name] = true
	}
	set.Spec.MinAvailableReplicas, set.Spec.ScaleDownCooldown = 0, &metav1.Duration{}
	if err := p.c.Update(p.ctx, &set); err != nil {
		t.Fatal(err)
	}
	// One instance stays, at rest, for Leases to wait on (exporterset/pool/leasewait.go).
	p.eventually(60*time.Second, "the pool retired down to its standby, its VMs kept (Retain)", func() string {
		if st := p.status(); st.Replicas != 1 {
			return fmt.Sprintf("%d instances", st.Replicas)
		}
		vms := p.vms()
		for n := range names {
			if _, ok := vms[n]; !ok {
				return "VM of " + n + " deleted despite Retain"
			}
		}
		return ""
	})
}
