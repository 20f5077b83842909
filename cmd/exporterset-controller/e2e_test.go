package main

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/jumpsim"
	"github.com/exporterset/exporterset/internal/testing/testenv"
	"github.com/exporterset/exporterset/internal/testing/testproc"
)

// samplesIn applies the CA ConfigMap and config/samples into a fresh namespace.
func samplesIn(t *testing.T) string {
	t.Helper()
	ns, err := env.CreateNamespace(ctx, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := testenv.ApplySamples(ctx, env.Client, "", ns); err != nil {
		t.Fatal(err)
	}
	return ns
}

func startSim(t *testing.T, ns string) *jumpsim.Simulator {
	t.Helper()
	sim, err := jumpsim.New(env.Config, jumpsim.WithNamespaces(ns))
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Stop() })
	return sim
}

func poolStatus(t *testing.T, ns string) vtv1alpha1.ExporterSetStatus {
	var s vtv1alpha1.ExporterSet
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "x86-64-pool"}, &s); err != nil {
		t.Fatal(err)
	}
	return s.Status
}

// The built binary against a real API server: the sample pool reaches its warm buffer, a
// lease is served and replaced, and SIGTERM stops the process cleanly within its grace.
func TestBinaryServesSamplePool(t *testing.T) {
	ns := samplesIn(t)
	p, l := leaseFromWarmPool(t, ns, "e2e")
	testproc.WaitFor(t, 30*time.Second, "lease assigned and the buffer refilled", func() (bool, string) {
		_ = env.Client.Get(ctx, client.ObjectKeyFromObject(l), l)
		st := poolStatus(t, ns)
		return l.Status.ExporterRef != nil && st.LeasedReplicas == 1 && st.AvailableReplicas == 1, fmt.Sprintf("lease %v, %+v", l.Status.ExporterRef, st)
	})
	leased := l.Status.ExporterRef.Name
	if strings.Contains(p.Output(), "upstream Jumpstarter's") {
		t.Errorf("our own CRD taken for upstream's:\n%s", testproc.Tail(p.Output(), 20))
	}
	patched := l.DeepCopy()
	patched.Spec.Release = true
	if err := env.Client.Patch(ctx, patched, client.MergeFrom(l)); err != nil {
		t.Fatal(err)
	}
	testproc.WaitFor(t, 30*time.Second, "the released instance recycled", func() (bool, string) {
		var e jumpstarterv1alpha1.Exporter
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: leased}, &e)
		st := poolStatus(t, ns)
		gone := err != nil || e.DeletionTimestamp != nil
		return gone && st.AvailableReplicas == 1 && st.LeasedReplicas == 0, fmt.Sprintf("gone=%v %+v", gone, st)
	})
	p.Stop(t, 25*time.Second)
}

// Two replicas with --leader-elect and no --provisioner: the pool's namespace gets the
// provisioner's Lease (upstream's name); only its holder reconciles; killed, the other takes
// over within the lease duration.
func TestLeaderElectionFailover(t *testing.T) {
	ns := samplesIn(t)
	startSim(t, ns)
	kc := kubeconfig(t)
	args := func() []string {
		return []string{"run", "--kubeconfig", kc, "--namespace", ns, "--leader-elect",
			"--leader-elect-lease-duration", "3s",
			"--leader-elect-renew-deadline", "2s", "--leader-elect-retry-period", "500ms",
			"--metrics-bind-address", "0", "--health-probe-bind-address", "0"}
	}
	const acquired = "acquired the provisioner's lock"
	a := start(t, args()...)
	testproc.WaitFor(t, 60*time.Second, "a leader on the provisioner's Lease in the pool's namespace", func() (bool, string) {
		var l coordinationv1.Lease
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "exporter-set-controller-qemu.jumpstarter.dev"}, &l)
		return err == nil && l.Spec.HolderIdentity != nil && strings.Contains(a.Output(), acquired), fmt.Sprint(err)
	})
	b := start(t, args()...)
	testproc.WaitFor(t, 60*time.Second, "the pool served by the leader, the standby waiting", func() (bool, string) {
		st := poolStatus(t, ns)
		return st.AvailableReplicas == 1 && strings.Contains(b.Output(), "waiting for the provisioner's lock"), fmt.Sprintf("%+v", st)
	})
	time.Sleep(2 * time.Second)
	if strings.Contains(b.Output(), acquired) {
		t.Fatalf("the standby took the lock while the leader was alive:\n%s", testproc.Tail(b.Output(), 20))
	}
	killed := time.Now()
	a.Kill()
	testproc.WaitFor(t, 10*time.Second, "the standby to take over", func() (bool, string) {
		return strings.Contains(b.Output(), acquired), ""
	})
	if took := time.Since(killed); took > 3*time.Second+3*time.Second {
		t.Fatalf("takeover took %s, more than the lease duration plus a retry", took)
	}
	// And it really reconciles: scale the floor up.
	var set vtv1alpha1.ExporterSet
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "x86-64-pool"}, &set); err != nil {
		t.Fatal(err)
	}
	set.Spec.MinReplicas = 2
	if err := env.Client.Update(ctx, &set); err != nil {
		t.Fatal(err)
	}
	testproc.WaitFor(t, 30*time.Second, "the new leader to apply the new floor", func() (bool, string) {
		st := poolStatus(t, ns)
		c := apimeta.FindStatusCondition(st.Conditions, vtv1alpha1.ConditionAvailable)
		return st.Replicas >= 2 && c != nil, fmt.Sprintf("%+v", st)
	})
	b.Stop(t, 25*time.Second)
}

func TestBadFlagsFailWithOneLine(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
		code int
	}{
		{[]string{"run", "--namespaces", "a"}, "flag provided but not defined: -namespaces (see --help)", 2},
		{[]string{"run", "--kubeconfig", kubeconfig(t), "--provisioner", "qemu.jumpstarter.dev", "--provisioner", "renode.example.dev"}, `--provisioner: unknown provisioner "renode.example.dev"`, 2},
		{[]string{"run", "--kubeconfig", kubeconfig(t), "--plugin-dir", "/does/not/exist"}, "--plugin-dir: stat /does/not/exist: no such file or directory", 2},
		{[]string{"run", "--kubeconfig", kubeconfig(t), "--namespace", "Not_A_Namespace"}, `--namespace "Not_A_Namespace"`, 2},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`, 1},
		// The local mode is its own command (cmd/exporterset-dev), not linked in here.
		{[]string{"dev"}, `unknown command "dev"`, 1},
	} {
		out, err := exec.Command(binary, tc.args...).CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		text := strings.TrimSpace(string(out))
		if code != tc.code || !strings.Contains(text, tc.want) {
			t.Errorf("%v: exit %d, output %q; want exit %d and %q", tc.args, code, text, tc.code, tc.want)
		}
		if strings.Contains(text, "goroutine ") {
			t.Errorf("%v: a stack trace instead of a message:\n%s", tc.args, text)
		}
		if tc.code == 2 && strings.Count(text, "\n") > 0 {
			t.Errorf("%v: more than one line:\n%s", tc.args, text)
		}
	}
	out, err := exec.Command(binary, "version").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "plugin protocol versions: 1-2") {
		t.Errorf("version: %v %s", err, out)
	}
	out, err = exec.Command(binary, "help").CombinedOutput()
	if err != nil || strings.Contains(string(out), "dev") || !strings.Contains(string(out), "version") {
		t.Errorf("help should list run and version, and no dev mode: %v %s", err, out)
	}
	out, err = exec.Command(binary, "run", "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "-leader-elect") || !strings.Contains(string(out), "-kube-api-qps") {
		t.Errorf("run --help: %v %s", err, out)
	}
}

// leaseFromWarmPool starts jumpsim and the binary on the sample pool in ns, waits for its
// warm buffer of one, and creates a Lease named name for it.
func leaseFromWarmPool(t *testing.T, ns, name string) (*testproc.Proc, *jumpstarterv1alpha1.Lease) {
	t.Helper()
	startSim(t, ns)
	p := start(t, "run", "--kubeconfig", kubeconfig(t), "--namespace", ns,
		"--metrics-bind-address", "127.0.0.1:0", "--health-probe-bind-address", "127.0.0.1:0")
	testproc.WaitFor(t, 60*time.Second, "warm buffer of 1", func() (bool, string) {
		st := poolStatus(t, ns)
		return st.AvailableReplicas == 1, fmt.Sprintf("%+v", st)
	})
	l := &jumpstarterv1alpha1.Lease{}
	l.Name, l.Namespace = name, ns
	l.Spec.ClientRef.Name = "e2e"
	l.Spec.Selector.MatchLabels = map[string]string{"board": "x86-64-virtual"}
	if err := env.Client.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	return p, l
}
