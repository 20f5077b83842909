package exporterset_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/internal/testing/labhost"
	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioners/baremetal"
)

// The controller against real lab hosts: envtest for the cluster, jumpsim for the Jumpstarter
// core, and the real qemu-baremetal provisioner starting real QEMU (-machine none, TCG, with
// its QMP socket) and a stand-in exporter over real SSH on sshd hosts in network namespaces
// (internal/testing/labhost). The one simulated part is the exporter's registration with the
// core: the stand-in does not speak Jumpstarter's protocol, so a bridge (labWorld.bridge)
// connects each Exporter to jumpsim from outside while the provisioner sees its unit Ready.
// Needs root and the lab's packages; skips cleanly otherwise.

// labSecret is the class's credentials Secret.
const labSecret = "lab-ssh"

// labExporterCommand is the stand-in exporter: it runs only if its config arrived, and then
// stays up, as an exporter serving its board does.
var labExporterCommand = []string{"sh", "-c", `test -s "$1" || exit 1; exec sleep 3600`, "exporter"}

// labWorld is a world whose controller serves the real baremetal provisioner over a lab.
type labWorld struct {
	*world
	lab   *labhost.Lab
	slots []int
	// prov is the bridge's own provisioner: it asks the hosts as the controller's does, on
	// connections of its own.
	prov *baremetal.Provisioner
	// wrap, when set, wraps the controller's provisioner (startController).
	wrap func(*baremetal.Provisioner) provisioner.Provisioner
	// maxSeen is the most instance directories seen on each host at once (watchSlots).
	mu      sync.Mutex
	maxSeen []int
}

// newLabWorld starts a lab of len(slots) hosts, a class "lab" of the baremetal provisioner
// over them (host i with slots[i]), the bridge and the slot watch. The controller is started
// by the caller (startController), so that it can wrap the provisioner first.
func newLabWorld(t *testing.T, slots ...int) *labWorld {
	labhost.Require(t)
	qemu := labhost.RequireQEMU(t)
	if env == nil || env.Config == nil {
		t.Skip("no envtest")
	}
	w := newWorld(t)
	lab := labhost.Start(t, len(slots))
	// Registered after the lab's teardown, so this runs first: no QEMU or exporter outlives
	// the test, whatever happened.
	t.Cleanup(lab.KillInstances)
	lw := &labWorld{world: w, lab: lab, slots: slots, prov: baremetal.New(), maxSeen: make([]int, len(slots))}
	t.Cleanup(func() { _ = lw.prov.Close() })

	params := lab.ClassParameters(t, slots, qemu, labExporterCommand)
	w.create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: labSecret},
		Data: map[string][]byte{baremetal.SecretKeyPrivateKey: lab.ClientKey, baremetal.SecretKeyKnownHosts: lab.KnownHosts()}})
	w.class("lab", func(c *vtv1alpha1.VirtualTargetClass) {
		c.Spec.Provisioner = baremetal.ProvisionerName
		c.Spec.CredentialsSecretRef = &corev1.LocalObjectReference{Name: labSecret}
		c.Spec.Parameters = &apiextensionsv1.JSON{Raw: params}
	})
	go lw.bridge()
	go lw.watchSlots()
	return lw
}

// startController runs a controller (a fresh baremetal provisioner, as a fresh process has)
// serving the lab beside the fake, and returns its stop.
func (lw *labWorld) startController() (stop func()) {
	p := baremetal.New()
	lw.t.Cleanup(func() { _ = p.Close() })
	var served provisioner.Provisioner = p
	if lw.wrap != nil {
		served = lw.wrap(p)
	}
	registry := lw.fake.Registry()
	if err := registry.Register(baremetal.ProvisionerName, "lab", served); err != nil {
		lw.t.Fatal(err)
	}
	return lw.controllerServing(env.Config, registry)
}

// labSet creates a set of the lab class.
func (lw *labWorld) labSet(name string, minR, maxR, minAvail int32) {
	lw.set(name, minR, maxR, minAvail, func(s *vtv1alpha1.ExporterSet) { s.Spec.VirtualTargetClassName = "lab" })
}

// request is the provisioner's request for Exporter e, as the controller builds it, with the
// credentials Secret as it is now.
func (lw *labWorld) request(ctx context.Context, e *jumpstarterv1alpha1.Exporter) (*provisioner.Request, error) {
	var set vtv1alpha1.ExporterSet
	var class vtv1alpha1.VirtualTargetClass
	var secret corev1.Secret
	for _, o := range []struct {
		name string
		obj  client.Object
	}{{e.Labels[pool.LabelSet], &set}, {"lab", &class}, {labSecret, &secret}} {
		if err := lw.c.Get(ctx, client.ObjectKey{Namespace: lw.ns, Name: o.name}, o.obj); err != nil {
			return nil, err
		}
	}
	req, err := provisioner.NewRequest(&set, &class, provisioner.Images{})
	if err != nil {
		return nil, err
	}
	req.Credentials = secret.Data
	return req.ForExporter(e, ""), nil
}

// bridge stands in for the exporters' registration with the Jumpstarter core, the only
// simulated part of these tests: every 250 ms, for each Exporter whose unit has a recorded
// host, it asks the real provisioner's ObserveExternal (real SSH to the host) and connects
// the Exporter to jumpsim from outside while the unit is Ready, disconnecting it otherwise,
// as the real exporter process on the host would register, and drop when it or its host
// dies. Each Exporter is observed in a goroutine of its own, so that a dead host's slow
// answer does not hold up the others.
func (lw *labWorld) bridge() {
	var mu sync.Mutex
	busy := map[string]bool{}
	connected := map[string]bool{}
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-lw.ctx.Done():
			return
		case <-tick.C:
		}
		var list jumpstarterv1alpha1.ExporterList
		if err := lw.c.List(lw.ctx, &list, client.InNamespace(lw.ns)); err != nil {
			continue
		}
		for i := range list.Items {
			e := &list.Items[i]
			if e.Annotations[baremetal.AnnotationHost] == "" {
				continue
			}
			mu.Lock()
			if busy[e.Name] {
				mu.Unlock()
				continue
			}
			busy[e.Name] = true
			mu.Unlock()
			go func() {
				defer func() { mu.Lock(); delete(busy, e.Name); mu.Unlock() }()
				ctx, cancel := context.WithTimeout(lw.ctx, 30*time.Second)
				defer cancel()
				ready := false
				if req, err := lw.request(ctx, e); err == nil {
					st, err := lw.prov.ObserveExternal(ctx, req)
					ready = err == nil && st.Phase == provisioner.ExternalReady
				}
				mu.Lock()
				was := connected[e.Name]
				mu.Unlock()
				if ready == was || lw.ctx.Err() != nil {
					return
				}
				var err error
				if ready {
					err = lw.sim.ConnectFromOutside(ctx, lw.ns, e.Name)
				} else {
					err = lw.sim.DisconnectFromOutside(ctx, lw.ns, e.Name)
				}
				if err == nil {
					mu.Lock()
					connected[e.Name] = ready
					mu.Unlock()
				}
			}()
		}
	}
}

// watchSlots records the most instance directories seen on each host at once, every 100 ms.
func (lw *labWorld) watchSlots() {
	for lw.ctx.Err() == nil {
		lw.mu.Lock()
		for i := range lw.lab.Hosts {
			lw.maxSeen[i] = max(lw.maxSeen[i], len(lw.lab.InstanceDirs(i)))
		}
		lw.mu.Unlock()
		time.Sleep(100 * time.Millisecond)
	}
}

// checkSlots fails if a host was ever seen running more instances than its slots.
func (lw *labWorld) checkSlots() {
	lw.t.Helper()
	lw.mu.Lock()
	defer lw.mu.Unlock()
	for i, h := range lw.lab.Hosts {
		lw.t.Logf("lab: %s ran at most %d instances (slots %d)", h.Name, lw.maxSeen[i], lw.slots[i])
		if lw.maxSeen[i] > lw.slots[i] {
			lw.t.Errorf("%s ran %d instances at once, more than its %d slots", h.Name, lw.maxSeen[i], lw.slots[i])
		}
	}
}

// hostOf is the host the controller recorded for each live Exporter of set.
func (lw *labWorld) hostOf(set string) map[string]string {
	out := map[string]string{}
	for _, e := range lw.exporters(set) {
		if h := e.Annotations[baremetal.AnnotationHost]; h != "" && e.DeletionTimestamp == nil {
			out[e.Name] = h
		}
	}
	return out
}

// orphans lists the instance directories on the hosts that no Exporter of the namespace
// records there: units nothing would clean up.
func (lw *labWorld) orphans() []string {
	var list jumpstarterv1alpha1.ExporterList
	if err := lw.c.List(lw.ctx, &list, client.InNamespace(lw.ns)); err != nil {
		lw.t.Fatal(err)
	}
	want := map[string]bool{}
	for _, e := range list.Items {
		if h := e.Annotations[baremetal.AnnotationHost]; h != "" {
			want[h+":"+lw.ns+"_"+e.Labels[pool.LabelSet]+"/"+e.Name] = true
		}
	}
	var out []string
	for i, h := range lw.lab.Hosts {
		for _, d := range lw.lab.InstanceDirs(i) {
			if !want[h.Name+":"+d] {
				out = append(out, h.Name+":"+d)
			}
		}
	}
	return out
}

// noPods fails if any Pod exists in the namespace: a hosted set has none.
func (lw *labWorld) noPods() {
	lw.t.Helper()
	var pods corev1.PodList
	if err := lw.c.List(lw.ctx, &pods, client.InNamespace(lw.ns)); err != nil {
		lw.t.Fatal(err)
	}
	if len(pods.Items) > 0 {
		lw.t.Errorf("%d Pods in a namespace of hosted sets only, want none (first %s)", len(pods.Items), pods.Items[0].Name)
	}
}

// A set of 3 warm exporters over two lab hosts of 2 slots each: every unit runs real QEMU
// and the stand-in exporter on a host, no host exceeds its slots, no Pod exists, a Lease is
// served, and deleting the set removes every unit from the hosts.
func TestLabWarmPoolAcrossHosts(t *testing.T) {
	lw := newLabWorld(t, 2, 2)
	lw.startController()
	created := time.Now()
	lw.labSet("lab", 0, 3, 3)
	lw.waitStatus("lab", 120*time.Second, "a first available exporter", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas >= 1 })
	t.Logf("lab: set created → first available %.1f s", time.Since(created).Seconds())
	lw.waitHealthy("lab", 3, 180*time.Second)
	t.Logf("lab: set created → all 3 available %.1f s", time.Since(created).Seconds())

	hosts := lw.hostOf("lab")
	perHost := map[string]int{}
	for _, h := range hosts {
		perHost[h]++
	}
	t.Logf("lab: placement %v", hosts)
	if len(hosts) != 3 || perHost["lab1"] == 0 || perHost["lab2"] == 0 {
		t.Errorf("placement %v, want 3 instances over both hosts", hosts)
	}
	for name, h := range hosts {
		dir := filepath.Join(lw.lab.Hosts[slices.IndexFunc(lw.lab.Hosts, func(x labhost.Host) bool { return x.Name == h })].RootDir, lw.ns+"_lab", name)
		for _, f := range []string{"config.yaml", "qmp.sock", "qemu.pid", "exporter.pid"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
				t.Errorf("%s on %s: %v", name, h, err)
			}
		}
		if cfg, _ := os.ReadFile(filepath.Join(dir, "config.yaml")); !strings.Contains(string(cfg), "token: ") {
			t.Errorf("%s on %s: config.yaml holds no token: %q", name, h, cfg)
		}
	}
	if o := lw.orphans(); len(o) > 0 {
		t.Errorf("instance directories no Exporter records: %v", o)
	}
	lw.noPods()
	lw.checkSlots()

	l := lw.lease("l1", "lab")
	served := lw.waitServed(l)
	t.Logf("lab: lease l1 served by %s on %s", served, hosts[served])
	if hosts[served] == "" {
		t.Errorf("lease served by %s, not a unit on a lab host (%v)", served, hosts)
	}
	lw.release(l)
	lw.waitEnded(l)

	if err := lw.c.Delete(lw.ctx, lw.getSet("lab")); err != nil {
		t.Fatal(err)
	}
	lw.eventually(60*time.Second, "every unit removed from the hosts", func() string {
		if d := append(lw.lab.InstanceDirs(0), lw.lab.InstanceDirs(1)...); len(d) > 0 {
			return fmt.Sprintf("instance directories left: %v", d)
		}
		return ""
	})
	lw.noPods()
	lw.checkSlots()
}
