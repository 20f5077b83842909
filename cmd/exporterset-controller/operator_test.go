package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/testproc"
	"github.com/exporterset/exporterset/internal/testing/upstreamop"
)

// upstreamOperator is how upstream Jumpstarter's operator deploys an exporter-set controller
// for one provisioner: jumpstarter-dev/jumpstarter at commit b1f2bb41,
// controller/deploy/operator/internal/controller/jumpstarter/exporterset.go
// (createExporterSetDeployment and exporterSetPolicyRules; recorded in
// ../shared/reference/jumpstarter-contract.md §2b), the facts kept in internal/testing/upstreamop (the
// real-node tier uses them too). The tests below run our binary exactly so.
var upstreamOperator = struct {
	command   string                     // the container's command
	args      func(prov string) []string // the container's args
	namespace string                     // env var set from metadata.namespace
	probePort int                        // liveness /healthz and readiness /readyz
	electedAs func(prov string) string   // the leader election Lease upstream's binary takes
	rules     []rbacv1.PolicyRule        // the namespaced Role bound to its ServiceAccount
	probes    map[string]string          // probe -> path
}{
	command:   upstreamop.Command,
	args:      upstreamop.Args,
	namespace: upstreamop.NamespaceEnv,
	probePort: upstreamop.ProbePort,
	electedAs: upstreamop.LockName,
	probes:    map[string]string{"liveness": "/healthz", "readiness": "/readyz"},
	rules:     upstreamop.Rules,
}

// The sample class's provisioner (config/samples), which the operator would name.
const sampleProvisioner = "qemu.jumpstarter.dev"

// operatorKubeconfig grants a fresh user exactly the operator's Role in ns and returns a
// kubeconfig of that user.
func operatorKubeconfig(t *testing.T, ns string) string {
	t.Helper()
	user := "exporterset-operator-sa-" + ns
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "jumpstarter-exporterset-qemu-role", Namespace: ns}, Rules: upstreamOperator.rules}
	binding := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "jumpstarter-exporterset-qemu-rolebinding", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	for _, o := range []client.Object{role, binding} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteUserKubeconfig(path, user); err != nil {
		t.Fatal(err)
	}
	return path
}

// asOperator starts the binary as the operator's container would: invoked as
// upstreamOperator.command (a symbolic link to the binary, as in the image), with its args
// plus extra, and an environment of NAMESPACE and the kubeconfig only (the Pod's in-cluster
// config stands in for it here).
func asOperator(t *testing.T, ns, kubeconfig string, args []string) *testproc.Proc {
	t.Helper()
	link := filepath.Join(t.TempDir(), filepath.Base(upstreamOperator.command))
	if err := os.Symlink(binary, link); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(link, args...)
	cmd.Env = []string{upstreamOperator.namespace + "=" + ns, "KUBECONFIG=" + kubeconfig, "HOME=" + t.TempDir()}
	return testproc.StartCmd(t, cmd)
}

// operatorArgs are the operator's args; the probe port is the operator's unless another
// process of this machine holds it, then a free one (said in the log).
func operatorArgs(t *testing.T) ([]string, int) {
	t.Helper()
	args := upstreamOperator.args(sampleProvisioner)
	port := upstreamOperator.probePort
	if l, err := net.Listen("tcp", fmt.Sprintf(":%d", port)); err == nil {
		_ = l.Close()
	} else {
		free, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = free.Addr().(*net.TCPAddr).Port
		_ = free.Close()
		t.Logf("port %d is taken on this machine; probes on %d instead", upstreamOperator.probePort, port)
		for i, a := range args {
			if strings.HasPrefix(a, "--health-probe-bind-address=") {
				args[i] = fmt.Sprintf("--health-probe-bind-address=:%d", port)
			}
		}
	}
	return args, port
}

var forbidden = regexp.MustCompile(`(?i)forbidden`)

// Under exactly the operator's Deployment (command, args, NAMESPACE) and Role, the binary
// elects itself on upstream's Lease, builds the sample pool, records its events, answers its
// probes, and logs nothing forbidden.
func TestRunsAsUpstreamOperatorDeploysIt(t *testing.T) {
	ns := samplesIn(t)
	startSim(t, ns)
	args, port := operatorArgs(t)
	p := asOperator(t, ns, operatorKubeconfig(t, ns), args)

	testproc.WaitFor(t, 60*time.Second, "upstream's Lease held", func() (bool, string) {
		var l coordinationv1.Lease
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: upstreamOperator.electedAs(sampleProvisioner)}, &l)
		return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "", fmt.Sprint(err)
	})
	testproc.WaitFor(t, 60*time.Second, "the sample pool's warm buffer", func() (bool, string) {
		st := poolStatus(t, ns)
		return st.AvailableReplicas == 1, fmt.Sprintf("%+v", st)
	})
	for probe, path := range upstreamOperator.probes {
		testproc.WaitFor(t, 20*time.Second, probe+" probe "+path, func() (bool, string) {
			resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d%s", port, path))
			if err != nil {
				return false, err.Error()
			}
			_ = resp.Body.Close()
			return resp.StatusCode == http.StatusOK, resp.Status
		})
	}
	testproc.WaitFor(t, 20*time.Second, "an event about the set (core/v1)", func() (bool, string) {
		var evs corev1.EventList
		if err := env.Client.List(ctx, &evs, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.InvolvedObject.Kind == "ExporterSet" && e.InvolvedObject.Name == "x86-64-pool" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events, none about the set", len(evs.Items))
	})
	time.Sleep(2 * time.Second) // whatever was refused would have been retried and logged by now
	if loc := forbidden.FindStringIndex(p.Output()); loc != nil {
		out := p.Output()
		t.Fatalf("the log says forbidden under the operator's Role:\n%s", out[max(0, loc[0]-600):min(len(out), loc[1]+300)])
	}
	p.Stop(t, 25*time.Second)
}

// Two processes run as the operator runs them (same provisioner, so the same Lease): only the
// holder reconciles; killed, the other takes over within the lease duration and reconciles.
func TestTwoReplicasOneProvisionerLock(t *testing.T) {
	ns := samplesIn(t)
	startSim(t, ns)
	kc := operatorKubeconfig(t, ns)
	args := append(upstreamOperator.args(sampleProvisioner)[:3:3], "--health-probe-bind-address=127.0.0.1:0", "--metrics-bind-address=0",
		"--leader-elect-lease-duration=3s", "--leader-elect-renew-deadline=2s", "--leader-elect-retry-period=500ms")
	const acquired = "acquired the provisioner's lock"
	a := asOperator(t, ns, kc, args)
	testproc.WaitFor(t, 60*time.Second, "the first to take the lock", func() (bool, string) {
		return strings.Contains(a.Output(), acquired), ""
	})
	b := asOperator(t, ns, kc, args)
	testproc.WaitFor(t, 60*time.Second, "the standby waiting and the pool served", func() (bool, string) {
		st := poolStatus(t, ns)
		return strings.Contains(b.Output(), "waiting for the provisioners' locks") && st.AvailableReplicas == 1, fmt.Sprintf("%+v", st)
	})
	var l coordinationv1.Lease
	key := client.ObjectKey{Namespace: ns, Name: upstreamOperator.electedAs(sampleProvisioner)}
	if err := env.Client.Get(ctx, key, &l); err != nil {
		t.Fatal(err)
	}
	first := *l.Spec.HolderIdentity
	// The standby's gate stays shut: it logs no takeover, and the pool stays as it is.
	before := poolStatus(t, ns)
	time.Sleep(3 * time.Second)
	if strings.Contains(b.Output(), acquired) {
		t.Fatalf("the standby took the lock while the holder was alive:\n%s", testproc.Tail(b.Output(), 20))
	}
	if after := poolStatus(t, ns); after.AvailableReplicas != before.AvailableReplicas || after.Replicas != before.Replicas {
		t.Fatalf("the pool moved while idle: %+v then %+v", before, after)
	}

	killed := time.Now()
	a.Kill()
	testproc.WaitFor(t, 10*time.Second, "the standby to take over", func() (bool, string) {
		return strings.Contains(b.Output(), acquired), ""
	})
	if took := time.Since(killed); took > 3*time.Second+2*time.Second {
		t.Fatalf("takeover took %s, more than the lease duration plus a few retries", took)
	}
	if err := env.Client.Get(ctx, key, &l); err != nil {
		t.Fatal(err)
	}
	if *l.Spec.HolderIdentity == first {
		t.Fatalf("the Lease still names the killed holder %s", first)
	}
	// And the new holder reconciles: raise the floor.
	patch := []byte(`{"spec":{"minReplicas":2}}`)
	set := poolSet(t, ns)
	if err := env.Client.Patch(ctx, set, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	testproc.WaitFor(t, 30*time.Second, "the new holder to apply the new floor", func() (bool, string) {
		st := poolStatus(t, ns)
		return st.Replicas >= 2, fmt.Sprintf("%+v", st)
	})
	if forbidden.MatchString(b.Output()) {
		t.Fatalf("forbidden in the log:\n%s", testproc.Tail(b.Output(), 40))
	}
	b.Stop(t, 25*time.Second)
}

func poolSet(t *testing.T, ns string) *vtv1alpha1.ExporterSet {
	t.Helper()
	var s vtv1alpha1.ExporterSet
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "x86-64-pool"}, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}
