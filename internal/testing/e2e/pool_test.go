//go:build e2e

package e2e

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/e2e/node"
	"github.com/exporterset/exporterset/internal/testing/testenv"
	"github.com/exporterset/exporterset/internal/testing/testproc"
)

// samplePool is config/samples' ExporterSet (upstream's sample pool).
const samplePool = "x86-64-pool"

var sampleSelector = map[string]string{"board": "x86-64-virtual"}

// Upstream's sample class and pool, unchanged, on the real node and upstream's core: the
// warm buffer is reached with Pods the real scheduler placed and the real kubelet started
// (init container copying jumpstarter-exec into /shared, the runtime as a native sidecar,
// the exporter reading its mounted config as UID 65532, KVM from the device plugin), each
// exporter registered over gRPC with upstream's jumpstarter-controller, using the
// credential and endpoint upstream issued and the CA the tier made. A Lease taken with a
// selector is assigned by upstream's scheduler, the exporter reports LeaseReady, and the
// release makes the exporter exit (exitOnLeaseEnd); a replacement becomes available.
func TestSamplePoolOnRealNode(t *testing.T) {
	deployController(t)
	ns := newNamespace(t, "sample")
	c := startCore(t, ns)
	rec := recordTransitions(t, ns)
	trace := traceFirstInstance(t, ns)
	created := time.Now()
	if _, err := testenv.ApplySamples(ctx, env.Client, "", ns); err != nil {
		t.Fatal(err)
	}
	var firstAvailable time.Duration
	testproc.WaitFor(t, 3*time.Minute, "the sample pool's warm buffer", func() (bool, string) {
		s := getSet(t, ns, samplePool)
		if s.Status.AvailableReplicas >= 1 && firstAvailable == 0 {
			firstAvailable = time.Since(created)
		}
		a := condition(s, string(vtv1alpha1.ConditionAvailable))
		return a.Status == "True", fmt.Sprintf("Available=%s %s: %s; pods:%s", a.Status, a.Reason, a.Message, describePods(podsOf(t, ns)))
	})
	t.Logf("set created -> first instance available on the real node: %s", firstAvailable.Round(10*time.Millisecond))
	trace.controllerSteps(ns)
	for _, step := range []string{stepGate, stepFirstPass, stepCreate} {
		if !trace.seen(step) {
			t.Errorf("the controller logged no %q step for namespace %s", step, ns)
		}
	}
	t.Logf("FIRST INSTANCE on the real node, upstream's core (each step's first sighting on a watch or in the controller's log, since the samples were applied):\n%s", trace.breakdown())

	for _, p := range podsOf(t, ns) {
		if p.Status.Phase != corev1.PodRunning {
			continue
		}
		if p.Spec.NodeName != node.Name || !scheduledByScheduler(&p) {
			t.Errorf("Pod %s: nodeName %q, scheduled %v: want placed on %s by the scheduler", p.Name, p.Spec.NodeName, scheduledByScheduler(&p), node.Name)
		}
		checkInstancePod(t, &p)
	}

	l := takeLease(t, ns, sampleSelector)
	leased := l.Status.ExporterRef.Name
	t.Logf("lease %s holds %s", l.Name, leased)
	// Only the exporter process tells upstream it is LeaseReady, once upstream's Status
	// stream told it of the lease.
	waitExporterStatus(t, ns, leased, jsv1.ExporterStatusLeaseReady)
	releaseLease(t, l)
	// exitOnLeaseEnd: the exporter exits, its Pod completes, the controller replaces it.
	testproc.WaitFor(t, 3*time.Minute, "a replacement of "+leased+" to be available", func() (bool, string) {
		s := getSet(t, ns, samplePool)
		for _, p := range podsOf(t, ns) {
			if p.Labels == nil || p.Status.Phase != corev1.PodRunning || !podReady(&p) {
				continue
			}
			if owner := controllerName(&p); owner != "" && owner != leased && s.Status.AvailableReplicas >= 1 {
				return true, ""
			}
		}
		a := condition(s, string(vtv1alpha1.ConditionAvailable))
		return false, fmt.Sprintf("available=%d Available=%s %s; pods:%s", s.Status.AvailableReplicas, a.Status, a.Reason, describePods(podsOf(t, ns)))
	})
	logCore(t, c)
	for _, k := range []string{"Exporter " + leased, "Lease " + l.Name} {
		t.Logf("FIDELITY upstream's core, %s:\n%s", k, rec.Of(k))
	}
}

// checkInstancePod checks what only a real kubelet proves about an instance Pod: the init
// container completed (it copied jumpstarter-exec into /shared), the runtime sidecar and
// the exporter run, and both got the KVM device.
func checkInstancePod(t *testing.T, p *corev1.Pod) {
	t.Helper()
	for _, cs := range p.Status.InitContainerStatuses {
		switch {
		case cs.Name == "copy-jumpstarter-exec" && (cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0):
			t.Errorf("Pod %s: init container %s did not complete: %s", p.Name, cs.Name, stateText(cs.State))
		case cs.Name == "target-runtime" && cs.State.Running == nil:
			t.Errorf("Pod %s: sidecar %s is not running: %s", p.Name, cs.Name, stateText(cs.State))
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == "exporter" && (cs.State.Running == nil || !cs.Ready) {
			t.Errorf("Pod %s: exporter not running and ready: %s", p.Name, stateText(cs.State))
		}
	}
}

// controllerName is the name of the Pod's controller (its Exporter).
func controllerName(p *corev1.Pod) string {
	for _, r := range p.OwnerReferences {
		if r.Controller != nil && *r.Controller {
			return r.Name
		}
	}
	return ""
}
