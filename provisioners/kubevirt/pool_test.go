package kubevirt

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/internal/jumpsim"
	"github.com/exporterset/exporterset/internal/virtsim"
	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioner/provisionertest"
)

// pool is one test's two worlds: a namespace of the management cluster with the Jumpstarter
// simulator and the reconciler (serving this provisioner in process), and a VM namespace of
// the remote cluster with the simulated virt-controller.
type pool struct {
	t        *testing.T
	ctx      context.Context
	ns, vmNS string
	c, rc    client.Client // management, remote (direct, not through the proxy)
	sim      *jumpsim.Simulator
	vs       *virtsim.Sim
}

func newPool(t *testing.T, recycle vtv1alpha1.RecycleStrategy, reclaim vtv1alpha1.ReclaimPolicy) *pool {
	t.Helper()
	return newPoolWith(t, recycle, reclaim, New())
}

// newPoolWith is newPool with prov serving the provisioner name (in process, or a plugin
// through the host).
func newPoolWith(t *testing.T, recycle vtv1alpha1.RecycleStrategy, reclaim vtv1alpha1.ReclaimPolicy, prov provisioner.Provisioner) *pool {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p := &pool{t: t, ctx: ctx, c: env.Client, rc: remoteClient(t)}
	var err error
	if p.ns, err = env.CreateNamespace(ctx, "kvpool"); err != nil {
		t.Fatal(err)
	}
	if p.vmNS, err = remote.CreateNamespace(ctx, "kvvms"); err != nil {
		t.Fatal(err)
	}
	p.vs = virtsim.New(p.rc)
	go p.vs.Run(ctx, 50*time.Millisecond)
	if p.sim, err = jumpsim.New(env.Config, jumpsim.WithNamespaces(p.ns)); err != nil {
		t.Fatal(err)
	}
	if err := p.sim.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.sim.Stop() })
	p.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: exporterset.DefaultCAConfigMap, Namespace: p.ns},
		Data: map[string]string{exporterset.DefaultCAKey: "-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n"}})
	p.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "remote-kubevirt", Namespace: p.ns}, Data: map[string][]byte{"kubeconfig": kubeconfig}})
	p.create(&vtv1alpha1.VirtualTargetClass{ObjectMeta: metav1.ObjectMeta{Name: "kubevirt", Namespace: p.ns},
		Spec: vtv1alpha1.VirtualTargetClassSpec{
			Provisioner:          Name,
			ReclaimPolicy:        reclaim,
			CredentialsSecretRef: &corev1.LocalObjectReference{Name: "remote-kubevirt"},
			Parameters: &apiextensionsv1.JSON{Raw: []byte(fmt.Sprintf(
				`{"namespace": %q, "containerDisk": "quay.io/containerdisks/fedora:41", "forwardPorts": {"adb": 6520}}`, p.vmNS))},
		}})
	p.controller(prov)
	p.create(&vtv1alpha1.ExporterSet{ObjectMeta: metav1.ObjectMeta{Name: "pool", Namespace: p.ns},
		Spec: vtv1alpha1.ExporterSetSpec{
			VirtualTargetClassName: "kubevirt", MinAvailableReplicas: 2, MaxReplicas: ptr.To[int32](4), RecycleStrategy: recycle,
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"board": "kv"}},
			Template: vtv1alpha1.ExporterTemplate{Metadata: vtv1alpha1.ExporterTemplateMetadata{Labels: map[string]string{"board": "kv"}}},
		}})
	return p
}

// controller runs the reconciler with this provisioner, sweeping the remote inventory every
// second, until the test ends.
func (p *pool) controller(prov provisioner.Provisioner) {
	mgr, err := ctrl.NewManager(env.Config, ctrl.Options{Scheme: env.Scheme, Cache: exporterset.CacheOptions(p.ns),
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}}) // one manager per test
	if err != nil {
		p.t.Fatal(err)
	}
	reg := provisioner.NewRegistry()
	if err := reg.Register(Name, "test", prov); err != nil {
		p.t.Fatal(err)
	}
	r := exporterset.NewReconciler(mgr.GetClient(), mgr.GetAPIReader(), reg,
		exporterset.WithRecorder(mgr.GetEventRecorder("exporterset")), exporterset.WithRetryInterval(time.Second), exporterset.WithInventoryInterval(time.Second), exporterset.WithFailureBackoff(time.Second, 2*time.Second))
	if err := r.SetupWithManager(mgr); err != nil {
		p.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(p.ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	p.t.Cleanup(func() { cancel(); <-done })
}

func (p *pool) create(obj client.Object) {
	p.t.Helper()
	if err := p.c.Create(p.ctx, obj); err != nil {
		p.t.Fatal(err)
	}
}

func (p *pool) eventually(timeout time.Duration, what string, cond func() string) {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		if last = cond(); last == "" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	p.t.Fatalf("timed out after %s waiting for %s: %s", timeout, what, last)
}

func (p *pool) status() vtv1alpha1.ExporterSetStatus {
	var set vtv1alpha1.ExporterSet
	if err := p.c.Get(p.ctx, types.NamespacedName{Namespace: p.ns, Name: "pool"}, &set); err != nil {
		p.t.Fatal(err)
	}
	return set.Status
}

func (p *pool) exporters() []jumpstarterv1alpha1.Exporter {
	var list jumpstarterv1alpha1.ExporterList
	if err := p.c.List(p.ctx, &list, client.InNamespace(p.ns)); err != nil {
		p.t.Fatal(err)
	}
	return list.Items
}

// vms are the VMs of the test's VM namespace, by the instance they were created for.
func (p *pool) vms() map[string]kubevirtv1.VirtualMachine {
	var list kubevirtv1.VirtualMachineList
	if err := p.rc.List(p.ctx, &list, client.InNamespace(p.vmNS)); err != nil {
		p.t.Fatal(err)
	}
	out := map[string]kubevirtv1.VirtualMachine{}
	for _, vm := range list.Items {
		out[vm.Labels[LabelInstance]] = vm
	}
	return out
}

// waitAvailable waits for n available instances, each with its VM.
func (p *pool) waitAvailable(n int32) {
	p.t.Helper()
	p.eventually(60*time.Second, fmt.Sprintf("%d available instances with their VMs", n), func() string {
		st := p.status()
		if st.AvailableReplicas < n {
			var pods corev1.PodList
			_ = p.c.List(p.ctx, &pods, client.InNamespace(p.ns))
			var ps []string
			for _, pod := range pods.Items {
				ps = append(ps, pod.Name+":"+string(pod.Status.Phase))
			}
			var es []string
			for _, e := range p.exporters() {
				es = append(es, fmt.Sprintf("%s %v %v", e.Name, e.Annotations, e.Status.Conditions))
			}
			var vs []string
			for n, vm := range p.vms() {
				vs = append(vs, fmt.Sprintf("%s:%s", n, vm.Status.PrintableStatus))
			}
			return fmt.Sprintf("status %d/%d available, conditions %v; pods %v; exporters %v; vms %v", st.AvailableReplicas, st.Replicas, st.Conditions, ps, es, vs)
		}
		vms := p.vms()
		for _, e := range p.exporters() {
			if _, ok := vms[e.Name]; !ok && e.DeletionTimestamp == nil {
				return "no VM for instance " + e.Name
			}
		}
		return ""
	})
}

func (p *pool) lease(name string) string {
	p.t.Helper()
	if _, err := p.sim.TakeLease(p.ctx, p.ns, name, map[string]string{"board": "kv"}, time.Hour); err != nil {
		p.t.Fatal(err)
	}
	l, err := p.sim.WaitLeaseAssigned(p.ctx, p.ns, name)
	if err != nil {
		p.t.Fatal(err)
	}
	return l.Status.ExporterRef.Name
}

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
	p.eventually(60*time.Second, "the pool retired, its VMs kept (Retain)", func() string {
		if st := p.status(); st.Replicas != 0 {
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

// remoteRequestFor is the request the reconciler would build for an instance of set.
func remoteRequestFor(t *testing.T, p *pool, set *vtv1alpha1.ExporterSet, name, uid string) *provisioner.Request {
	t.Helper()
	var class vtv1alpha1.VirtualTargetClass
	if err := p.c.Get(p.ctx, types.NamespacedName{Namespace: p.ns, Name: "kubevirt"}, &class); err != nil {
		t.Fatal(err)
	}
	req, err := provisioner.NewRequest(set, &class, DefaultImages())
	if err != nil {
		t.Fatal(err)
	}
	req.Credentials = map[string][]byte{"kubeconfig": kubeconfig}
	return req.ForExporter(&jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Namespace: p.ns, Name: name, UID: types.UID(uid)}}, "")
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
