package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/labhost"
	"github.com/exporterset/exporterset/internal/testing/testproc"
)

// The lab tier end to end with nothing simulated: the controller binary runs a set of the
// baremetal provisioner over two real sshd lab hosts (network namespaces), which start real
// QEMU and the stand-in exporter over real SSH; the exporters register with upstream
// Jumpstarter's own core controller over TLS, which marks them Online and assigns a Lease.
// The set reaches its warm buffer across both hosts, a Lease is served and released and the
// buffer comes back, no host ever runs more instances than its slots, and a host cut off is
// reported in Degraded by name while its instances are replaced on the other host.
//
// Deadlines are generous (CI is about twice as slow as a developer's machine); the timings
// are printed, never asserted.
func TestLabOnUpstreamCore(t *testing.T) {
	labhost.Require(t)
	qemu := labhost.RequireQEMU(t)
	up, coreBin := upstreamCoreEnv(t)
	jmp := buildJmp(t)
	const minAvail = 2
	// Two slots each: whichever host is cut, the other has room for its instances.
	slots := []int{2, 2}
	lab := labhost.Start(t, len(slots))
	// Cleanups run last-registered first: the controller (started below) stops, then every
	// instance's process group is killed, then this check runs, then the hosts go.
	t.Cleanup(func() {
		// SIGKILL is not instant: give the killed a moment to go.
		left := labProcesses(lab.Dir, jmp)
		for deadline := time.Now().Add(10 * time.Second); len(left) > 0 && time.Now().Before(deadline); left = labProcesses(lab.Dir, jmp) {
			time.Sleep(100 * time.Millisecond)
		}
		if len(left) > 0 {
			t.Errorf("processes outlive the test:\n  %s", strings.Join(left, "\n  "))
		}
	})
	t.Cleanup(lab.KillInstances)
	addr := lab.ServiceAddress(t)

	ns, err := up.CreateNamespace(ctx, "labcore")
	if err != nil {
		t.Fatal(err)
	}
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := up.WriteKubeconfig(kc); err != nil {
		t.Fatal(err)
	}
	c := startLabCore(t, up, coreBin, kc, ns, addr)
	t.Logf("lab: upstream's core serves %s; hosts %s (gateway %s) and %s (gateway %s)", c.Endpoint(),
		lab.Hosts[0].Address, lab.Hosts[0].Gateway, lab.Hosts[1].Address, lab.Hosts[1].Gateway)
	watch := watchSlots(t, lab)
	ctrl := start(t, "run", "--kubeconfig", kc, "--namespace", ns,
		"--metrics-bind-address", "0", "--health-probe-bind-address", "0")

	// 1. The warm buffer across both hosts, every exporter registered with the real core.
	created := time.Now()
	set := labPool(t, up, ns, lab, slots, qemu, jmp, minAvail, 4)
	var firstOnline time.Duration
	testproc.WaitFor(t, 4*time.Minute, "the set Available with its buffer Online on upstream's core", func() (bool, string) {
		xs := labExporters(t, up, ns)
		online := 0
		for _, x := range xs {
			if x.online {
				online++
			}
		}
		if online > 0 && firstOnline == 0 {
			firstOnline = time.Since(created)
		}
		s := labSetStatus(t, up, ns)
		a := apimeta.FindStatusCondition(s.Status.Conditions, vtv1alpha1.ConditionAvailable)
		return a != nil && a.Status == metav1.ConditionTrue && online >= minAvail,
			fmt.Sprintf("Available %+v; available %d; exporters:%s", a, s.Status.AvailableReplicas, describeExporters(xs))
	})
	t.Logf("lab: set created → first available %.1f s (the first Exporter upstream's core marked Online)", firstOnline.Seconds())
	t.Logf("lab: set created → Available=True, buffer of %d Online %.1f s", minAvail, time.Since(created).Seconds())
	xs := labExporters(t, up, ns)
	placed := perHost(xs)
	t.Logf("lab: placement%s", describeExporters(xs))
	if placed[lab.Hosts[0].Name] == 0 || placed[lab.Hosts[1].Name] == 0 {
		t.Errorf("the buffer does not span both hosts: %v", placed)
	}
	registered := strings.Join(c.Lines(`"Registering exporter"`), "\n")
	for _, x := range xs {
		if !x.online {
			t.Errorf("Exporter %s is not Online", x.name)
		}
		if !strings.Contains(registered, `"`+x.name+`"`) {
			t.Errorf("upstream's core logged no registration of %s:\n%s", x.name, registered)
		}
	}

	// 2. A Lease, as a client asks for one: upstream's scheduler assigns it; the set refills
	// its buffer beside it; released, its exporter exits and the pool returns to its buffer.
	l := &jsv1.Lease{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "lab-lease-", Namespace: ns},
		Spec: jsv1.LeaseSpec{ClientRef: corev1.LocalObjectReference{Name: "lab"},
			Selector: set.Spec.Selector, Duration: &metav1.Duration{Duration: 30 * time.Minute}},
	}
	asked := time.Now()
	if err := up.Client.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	testproc.WaitFor(t, 2*time.Minute, "upstream's core to assign the Lease", func() (bool, string) {
		if err := up.Client.Get(ctx, client.ObjectKeyFromObject(l), l); err != nil {
			return false, err.Error()
		}
		return l.Status.ExporterRef != nil, fmt.Sprintf("lease conditions %+v", l.Status.Conditions)
	})
	leased := l.Status.ExporterRef.Name
	t.Logf("lab: lease %s assigned by upstream's core to %s on %s after %.1f s", l.Name, leased, hostOf(xs, leased), time.Since(asked).Seconds())
	testproc.WaitFor(t, 3*time.Minute, "the buffer refilled beside the lease", func() (bool, string) {
		s := labSetStatus(t, up, ns)
		return s.Status.AvailableReplicas >= minAvail && s.Status.LeasedReplicas == 1, fmt.Sprintf("%+v; exporters:%s", s.Status, describeExporters(labExporters(t, up, ns)))
	})
	before := l.DeepCopy()
	l.Spec.Release = true
	if err := up.Client.Patch(ctx, l, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	testproc.WaitFor(t, 3*time.Minute, "the lease ended, "+leased+" gone and the buffer back", func() (bool, string) {
		var e jsv1.Exporter
		err := up.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: leased}, &e)
		s := labSetStatus(t, up, ns)
		return apierrors.IsNotFound(err) && s.Status.AvailableReplicas >= minAvail && s.Status.LeasedReplicas == 0,
			fmt.Sprintf("leased exporter: %v; %+v", err, s.Status)
	})
	t.Logf("lab: lease released → %s gone and the buffer of %d back %.1f s", leased, minAvail, time.Since(released).Seconds())
	if got := c.Lines("marked for release", "exporter unregistered"); len(got) == 0 {
		t.Errorf("upstream's core logged no release or unregistration")
	}

	// 3. A host cut off: its instances fail HostUnreachable, the set says so in Degraded, and
	// they are replaced on the other host.
	xs = labExporters(t, up, ns)
	placed = perHost(xs)
	cut := 0
	if placed[lab.Hosts[1].Name] > placed[lab.Hosts[0].Name] {
		cut = 1
	}
	gone, other := lab.Hosts[cut].Name, lab.Hosts[1-cut].Name
	t.Logf("lab: cutting %s (%d instances; %d on %s)%s", gone, placed[gone], placed[other], other, describeExporters(xs))
	lab.Cut(t, cut)
	cutAt := time.Now()
	restored := false
	defer func() {
		if !restored {
			lab.Restore(t, cut)
		}
	}()
	var degraded *metav1.Condition
	var degradedAfter time.Duration
	// A command in flight to the cut host ends after 30 s at most; four times that for CI.
	const stallBound = 120 * time.Second
	aborted := false
	testproc.WaitFor(t, 4*time.Minute, "the instances of "+gone+" replaced on "+other, func() (bool, string) {
		if degraded == nil && !aborted && time.Since(cutAt) > stallBound {
			// The provisioner bounds a command to 30 s (it did not before 08352a0: a host cut
			// mid-command held the set's pass until TCP gave up, ~15 min). Past the bound that
			// is a regression: say so, then abort the connections as TCP would, so that the
			// rest of the scenario still runs.
			aborted = true
			t.Errorf("no Degraded naming %s %.0f s after the cut: the set's pass waits on the cut host; aborting the controller's connections to it: %s",
				gone, stallBound.Seconds(), lab.AbortConnections(t, cut))
		}
		s := labSetStatus(t, up, ns)
		if d := apimeta.FindStatusCondition(s.Status.Conditions, vtv1alpha1.ConditionDegraded); d != nil && d.Status == metav1.ConditionTrue &&
			degraded == nil && strings.Contains(d.Message, gone) {
			degraded, degradedAfter = d.DeepCopy(), time.Since(cutAt)
		}
		xs := labExporters(t, up, ns)
		onOther := 0
		for _, x := range xs {
			if x.host == other && x.online && !x.retiring && !x.leased {
				onOther++
			}
		}
		return onOther >= minAvail && perHost(xs)[gone] == 0 && s.Status.AvailableReplicas >= minAvail && degraded != nil,
			fmt.Sprintf("%d Online on %s; Degraded seen %v; %+v; exporters:%s", onOther, other, degraded != nil, s.Status, describeExporters(xs))
	})
	how := "on its own"
	if aborted {
		how = fmt.Sprintf("after its connections were aborted at %.0f s", stallBound.Seconds())
	}
	t.Logf("lab: %s cut → Degraded names it %.1f s (%s): reason %s: %s", gone, degradedAfter.Seconds(), how, degraded.Reason, degraded.Message)
	t.Logf("lab: %s cut → its instances replaced on %s, buffer of %d Online %.1f s", gone, other, minAvail, time.Since(cutAt).Seconds())

	lab.Restore(t, cut)
	restored = true
	// Once the host is back, its replaced instances are cleaned up (they were marked
	// retiring, so their units answering again does not make them working instances).
	back := time.Now()
	deadline := back.Add(120 * time.Second)
	for len(lab.InstanceDirs(cut)) > 0 && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
	}
	if left := lab.InstanceDirs(cut); len(left) > 0 {
		t.Errorf("%s back: its replaced instances %v still there after %.0f s", gone, left, time.Since(back).Seconds())
	} else {
		t.Logf("lab: %s back → its replaced instances removed %.1f s", gone, time.Since(back).Seconds())
	}

	ctrl.Stop(t, 25*time.Second)
	watch.halt()
	most := watch.most()
	for i, h := range lab.Hosts {
		t.Logf("lab: at most %d instances seen at once on %s (slots %d)", most[i], h.Name, slots[i])
		if most[i] > slots[i] {
			t.Errorf("%s ran %d instances at once, more than its %d slots", h.Name, most[i], slots[i])
		}
	}
	t.Logf("upstream's core:\n  %s", strings.Join(c.Lines(`"Registering exporter"`, "Updating begin time for lease", "marked for release", "exporter unregistered"), "\n  "))
}

// hostOf is the host of Exporter name in xs.
func hostOf(xs []labExporter, name string) string {
	for _, x := range xs {
		if x.name == name {
			return x.host
		}
	}
	return "?"
}
