package kubevirt

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
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
	"github.com/exporterset/exporterset/internal/testing/jumpsim"
	"github.com/exporterset/exporterset/internal/testing/virtsim"
	"github.com/exporterset/exporterset/internal/tuning"
	"github.com/exporterset/exporterset/provisioner"
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
		exporterset.WithRecorder(mgr.GetEventRecorder("exporterset")), exporterset.WithTuning(tuning.Knobs{RetryInterval: time.Second, InventoryInterval: time.Second, BackoffBase: time.Second, BackoffLimit: 2 * time.Second}))
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
