package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/internal/testing/testenv"
	"github.com/exporterset/exporterset/internal/testing/testproc"
)

// ourWrite reports whether the API server recorded a write under one of our binary's field
// managers: the set reconciler's and the instance reconciler's (exporterset.SetupWithManager
// names them), or its user agent's program name for any other write. Upstream's binary is
// named exporter-set-controller.
func ourWrite(manager string) bool {
	return manager == "exporterset" || manager == "exporterset"+exporterset.InstanceManagerSuffix || manager == "exporterset-controller"
}

// defaultInstallArgs are the manager container's args of a default install: the chart's
// `helm template` with default values when Helm is built, else config/default (which
// TestChartMatchesKustomize holds equal to it), so the check runs in `make test` either way.
func defaultInstallArgs(t *testing.T) (args []string, from string) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	var objs []*unstructured.Unstructured
	if out, err := exec.Command(filepath.Join(root, "hack", "tools", "build.sh"), "--check", "helm").Output(); err == nil {
		objs, from = helmTemplate(t, strings.TrimSpace(string(out)), root), "helm template (default values)"
	} else {
		assets, err := testenv.AssetsDir(false)
		if err != nil {
			t.Fatal(err)
		}
		objs, from = objects(t, run(t, filepath.Join(assets, "kubectl"), "kustomize", filepath.Join(root, "config", "default"))), "config/default"
	}
	for _, u := range objs {
		if u.GetKind() != "Deployment" {
			continue
		}
		containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		for _, c := range containers {
			c := c.(map[string]any)
			if c["name"] != "manager" {
				continue
			}
			for _, a := range c["args"].([]any) {
				args = append(args, a.(string))
			}
			return args, from
		}
	}
	t.Fatalf("%s renders no Deployment with a manager container", from)
	return nil, ""
}

// localArgs turns a container's args into a local run's: a kubeconfig instead of the
// in-cluster config, and the metrics and probe ports off (the port numbers are the Pod's).
func localArgs(args []string, kubeconfig string) []string {
	out := []string{"run", "--kubeconfig", kubeconfig}
	for _, a := range args {
		switch {
		case strings.HasPrefix(a, "--metrics-bind-address="):
			out = append(out, "--metrics-bind-address=0")
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			out = append(out, "--health-probe-bind-address=0")
		default:
			out = append(out, a)
		}
	}
	return out
}

// ourWrites lists the objects of ns (the set, its Exporters, Pods and Secrets) that our
// binary wrote, by their managed fields.
func ourWrites(t *testing.T, ns string) []string {
	t.Helper()
	var out []string
	for _, k := range []struct {
		kind string
		list client.ObjectList
	}{
		{"ExporterSet", &vtv1alpha1.ExporterSetList{}},
		{"Exporter", &jumpstarterv1alpha1.ExporterList{}},
		{"Pod", &corev1.PodList{}},
		{"Secret", &corev1.SecretList{}},
	} {
		if err := env.Client.List(ctx, k.list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		items, err := apimeta.ExtractList(k.list)
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range items {
			o := item.(client.Object)
			for _, m := range o.GetManagedFields() {
				if ourWrite(m.Manager) {
					out = append(out, fmt.Sprintf("%s %s (%s %s)", k.kind, o.GetName(), m.Operation, m.Subresource))
				}
			}
		}
	}
	return out
}

// The default install (the chart's or config/default's args, a kubeconfig for the in-cluster
// config, its own namespace elsewhere) beside upstream's operator: while upstream's
// exporter-set controller holds exporter-set-controller-qemu.jumpstarter.dev in its namespace
// and serves a qemu pool there, ours creates, deletes and writes nothing of that pool, its
// status included; once upstream's stops, ours takes the pool over within the lease duration
// + 20 s, keeping the held lease.
func TestDefaultInstallLeavesUpstreamsPoolAlone(t *testing.T) {
	up := upstreamBinary(t)
	rendered, from := defaultInstallArgs(t)
	if !contains(rendered, "--leader-elect") {
		t.Fatalf("%s does not elect a leader by default: %v", from, rendered)
	}
	const leaseDuration = 15 * time.Second // the binary's default; the default install sets none
	for _, a := range rendered {
		if strings.HasPrefix(a, "--leader-elect-lease-duration") {
			t.Fatalf("%s sets %s: the lease duration below assumes the default", from, a)
		}
	}
	ns := samplesIn(t)
	startSim(t, ns)
	theirs := startUpstream(t, up, ns, operatorKubeconfig(t, ns))
	testproc.WaitFor(t, 60*time.Second, "upstream's warm buffer", func() (bool, string) {
		st := poolStatus(t, ns)
		return st.AvailableReplicas == 1, fmt.Sprintf("%+v", st)
	})
	_, leased, leasedPod := holdLease(t, ns, "upstream's buffer")
	lockKey := client.ObjectKey{Namespace: ns, Name: upstreamOperator.electedAs(sampleProvisioner)}
	var lock coordinationv1.Lease
	if err := env.Client.Get(ctx, lockKey, &lock); err != nil || lock.Spec.HolderIdentity == nil {
		t.Fatalf("upstream's Lease %s: %v", lockKey, err)
	}
	theirID := *lock.Spec.HolderIdentity
	before := ownedBy(t, ns)
	if w := ourWrites(t, ns); len(w) != 0 {
		t.Fatalf("our manager wrote before ours ran (the check would prove nothing): %v", w)
	}

	// Ours as the default install runs it: its own namespace for the Pod, all namespaces watched.
	args := localArgs(rendered, kubeconfig(t))
	t.Logf("ours, from %s: %v", from, args)
	cmd := exec.Command(binary, args...)
	cmd.Env = []string{"POD_NAMESPACE=exporterset-system", "HOME=" + t.TempDir()}
	ours := testproc.StartCmd(t, cmd)
	defer ours.Stop(t, 25*time.Second)
	waiting := "waiting for the provisioner's lock"
	testproc.WaitFor(t, 60*time.Second, "ours to see the pool and wait for its namespace's Lease", func() (bool, string) {
		return strings.Contains(ours.Output(), waiting) && strings.Contains(ours.Output(), lockKey.String()), testproc.Tail(ours.Output(), 5)
	})
	time.Sleep(10 * time.Second) // several gate retries (2 s) and a lease renewal or two
	const acquired = "acquired the provisioner's lock"
	if strings.Contains(ours.Output(), acquired) {
		t.Fatalf("ours took a provisioner's lock while upstream's held it:\n%s", testproc.Tail(ours.Output(), 20))
	}
	if w := ourWrites(t, ns); len(w) != 0 {
		t.Fatalf("ours wrote to upstream's pool while upstream's held the Lease: %v", w)
	}
	if now := ownedBy(t, ns); len(now) != len(before) {
		t.Fatalf("the pool changed while upstream's held the Lease: %d then %d instances", len(before), len(now))
	}
	if err := env.Client.Get(ctx, lockKey, &lock); err != nil || *lock.Spec.HolderIdentity != theirID {
		t.Fatalf("upstream's Lease changed hands while upstream ran: %v %v", err, lock.Spec.HolderIdentity)
	}

	theirs.Stop(t, 25*time.Second) // upstream's does not release its Lease: it expires
	stopped := time.Now()
	testproc.WaitFor(t, leaseDuration+20*time.Second, "ours to hold the Lease and write the pool's status", func() (bool, string) {
		if err := env.Client.Get(ctx, lockKey, &lock); err != nil {
			return false, err.Error()
		}
		holder := ""
		if lock.Spec.HolderIdentity != nil {
			holder = *lock.Spec.HolderIdentity
		}
		status := false
		for _, m := range poolSet(t, ns).ManagedFields {
			status = status || ourWrite(m.Manager) && m.Subresource == "status"
		}
		return holder != "" && holder != theirID && strings.Contains(ours.Output(), acquired) && status,
			fmt.Sprintf("holder %q, status written by ours %v", holder, status)
	})
	t.Logf("ours took the pool over %s after upstream's stopped", time.Since(stopped).Round(100*time.Millisecond))
	takenOverKeepingLease(t, ns, leased, &leasedPod)
	if forbidden.MatchString(ours.Output()) {
		t.Fatalf("forbidden in our log:\n%s", testproc.Tail(ours.Output(), 40))
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
