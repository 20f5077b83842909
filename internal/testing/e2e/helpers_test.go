//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/testproc"
)

func runtimeFromUnstructured(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}

func runtimeToUnstructured(from any, u *unstructured.Unstructured) error {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(from)
	if err != nil {
		return err
	}
	u.Object = m
	return nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// scheduledByScheduler reports whether the Pod was bound by a scheduler (PodScheduled=True)
// rather than created with spec.nodeName set.
func scheduledByScheduler(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// describePods is one line per Pod: phase, node and each container's state, for failures.
func describePods(pods []corev1.Pod) string {
	var b strings.Builder
	for _, p := range pods {
		fmt.Fprintf(&b, "\n  %s: %s node=%q", p.Name, p.Status.Phase, p.Spec.NodeName)
		if p.DeletionTimestamp != nil {
			fmt.Fprintf(&b, " deleting since %s", p.DeletionTimestamp.Format("15:04:05"))
		}
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue && c.Message != "" {
				fmt.Fprintf(&b, " %s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message)
			}
		}
		all := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
		for _, cs := range all {
			fmt.Fprintf(&b, " [%s ready=%v restarts=%d %s]", cs.Name, cs.Ready, cs.RestartCount, stateText(cs.State))
		}
	}
	if b.Len() == 0 {
		return "no Pods"
	}
	return b.String()
}

func stateText(s corev1.ContainerState) string {
	switch {
	case s.Waiting != nil:
		return "waiting " + s.Waiting.Reason + ": " + s.Waiting.Message
	case s.Terminated != nil:
		return fmt.Sprintf("terminated %s (%d): %s", s.Terminated.Reason, s.Terminated.ExitCode, s.Terminated.Message)
	case s.Running != nil:
		return "running"
	}
	return "unknown"
}

// newNamespace creates a namespace for one scenario and deletes it (and waits for its Pods
// to go, freeing the node's CPU for the next scenario) when the test ends.
func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := env.CreateNamespace(ctx, prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			dumpNamespace(t, ns)
		}
		_ = env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		deadline := time.Now().Add(2 * time.Minute)
		for time.Now().Before(deadline) {
			var pods corev1.PodList
			if err := env.Client.List(ctx, &pods, client.InNamespace(ns)); err == nil && len(pods.Items) == 0 {
				return
			}
			time.Sleep(500 * time.Millisecond)
		}
		t.Logf("Pods of namespace %s still there after 2m", ns)
	})
	return ns
}

// dumpNamespace logs the set's conditions and the Pods of a failed scenario.
func dumpNamespace(t *testing.T, ns string) {
	var sets vtv1alpha1.ExporterSetList
	if err := env.Client.List(ctx, &sets, client.InNamespace(ns)); err == nil {
		for _, s := range sets.Items {
			t.Logf("ExporterSet %s status: %+v", s.Name, s.Status)
		}
	}
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(ns)); err == nil {
		t.Logf("Pods:%s", describePods(pods.Items))
	}
	var evs corev1.EventList
	if err := env.Client.List(ctx, &evs, client.InNamespace(ns)); err == nil {
		var b strings.Builder
		for _, e := range evs.Items {
			fmt.Fprintf(&b, "\n  %s %s %s/%s %s: %s (x%d)", e.LastTimestamp.Format("15:04:05"), e.Type, e.InvolvedObject.Kind, e.InvolvedObject.Name, e.Reason, e.Message, e.Count)
		}
		t.Logf("Events:%s", b.String())
	}
	t.Logf("the controller's log lines about %s:%s", ns, controllerLogAbout(ns, 80))
}

// controllerLogAbout returns the last n lines of the controller's container logs (from the
// kubelet's log directory, restarts included) that name ns, and the controller Pods'
// restart counts: a failed scenario is otherwise judged without the controller's side.
func controllerLogAbout(ns string, n int) string {
	var pods corev1.PodList
	var b strings.Builder
	if err := env.Client.List(ctx, &pods, client.InNamespace(controllerNamespace)); err == nil {
		b.WriteString(describePods(pods.Items))
	}
	files, _ := filepath.Glob(filepath.Join(nd.PodLogsDir(), controllerNamespace+"_*", "*", "*.log"))
	sort.Strings(files)
	var lines []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(data), "\n") {
			if strings.Contains(l, ns) || strings.Contains(l, "panic") {
				lines = append(lines, l)
			}
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for _, l := range lines {
		b.WriteString("\n  " + l)
	}
	return b.String()
}

// getSet reads an ExporterSet.
func getSet(t *testing.T, ns, name string) *vtv1alpha1.ExporterSet {
	t.Helper()
	var s vtv1alpha1.ExporterSet
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// condition returns a condition of the set ("" reason when absent).
func condition(s *vtv1alpha1.ExporterSet, typ string) metav1.Condition {
	if c := apimeta.FindStatusCondition(s.Status.Conditions, typ); c != nil {
		return *c
	}
	return metav1.Condition{Type: typ, Status: metav1.ConditionUnknown}
}

// podsOf lists the set's Pods in ns, sorted by name.
func podsOf(t *testing.T, ns string) []corev1.Pod {
	t.Helper()
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	sort.Slice(pods.Items, func(i, j int) bool { return pods.Items[i].Name < pods.Items[j].Name })
	return pods.Items
}

// createLease creates a 30-minute lease on selector for client "e2e", as a user's `jmp` does.
func createLease(t *testing.T, ns string, selector map[string]string) *jsv1.Lease {
	t.Helper()
	l := &jsv1.Lease{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-lease-", Namespace: ns},
		Spec: jsv1.LeaseSpec{ClientRef: corev1.LocalObjectReference{Name: "e2e"},
			Selector: metav1.LabelSelector{MatchLabels: selector}, Duration: &metav1.Duration{Duration: 30 * time.Minute}},
	}
	if err := env.Client.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	return l
}

// takeLease creates a lease on selector and waits until it is assigned, returning it.
func takeLease(t *testing.T, ns string, selector map[string]string) *jsv1.Lease {
	t.Helper()
	l := createLease(t, ns, selector)
	waitLeaseAssigned(t, l, time.Minute)
	return l
}

// waitLeaseAssigned waits until the lease has an Exporter, reading it into l.
func waitLeaseAssigned(t *testing.T, l *jsv1.Lease, timeout time.Duration) {
	t.Helper()
	testproc.WaitFor(t, timeout, "lease "+l.Name+" to be assigned", func() (bool, string) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(l), l); err != nil {
			return false, err.Error()
		}
		return l.Status.ExporterRef != nil, fmt.Sprintf("conditions %+v", l.Status.Conditions)
	})
}

// patchNamed reads the object name of ns into obj, changes it and patches the difference.
func patchNamed(t *testing.T, ns, name string, obj client.Object, change func(client.Object)) {
	t.Helper()
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
	before := obj.DeepCopyObject().(client.Object)
	change(obj)
	if err := env.Client.Patch(ctx, obj, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}

// releaseLease ends a lease as a client does (spec.release).
func releaseLease(t *testing.T, l *jsv1.Lease) {
	t.Helper()
	before := l.DeepCopy()
	l.Spec.Release = true
	if err := env.Client.Patch(ctx, l, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}
