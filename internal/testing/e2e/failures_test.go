//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/internal/testing/e2e/node"
	"github.com/exporterset/exporterset/internal/testing/testproc"
)

// A failure scenario: what breaks the pool, the Degraded reason it must be reported with
// (the same as on jumpsim), and the fix after which the pool must recover.
type failure struct {
	name string
	// breakIt changes the class or set before the set exists (or the node) so that its
	// instances fail.
	breakIt func(t *testing.T, cls *vtv1alpha1.VirtualTargetClass, set *vtv1alpha1.ExporterSet)
	// fix repairs it on the live objects.
	fix  func(t *testing.T, ns string)
	want vtv1alpha1.ConditionReason
	// seen, when set, is a container state the real kubelet must show on the way.
	seen func(cs corev1.ContainerStatus) bool
	// seenWhat names it.
	seenWhat string
}

// Real failures on the real node and upstream's core, each reported with its Degraded reason and the kubelet's
// or scheduler's own words quoted, then fixed, after which the pool recovers. The real
// words are logged for the README's fidelity table.
func TestFailuresOnRealNode(t *testing.T) {
	deployController(t)
	for _, f := range []failure{{
		name: "image-absent",
		breakIt: func(t *testing.T, _ *vtv1alpha1.VirtualTargetClass, set *vtv1alpha1.ExporterSet) {
			// A registry on loopback where nothing listens: the pull fails at once and never
			// leaves the machine.
			set.Spec.Images = &vtv1alpha1.Images{Runtime: &vtv1alpha1.ImageSpec{Image: "127.0.0.1:5/absent:1", ImagePullPolicy: corev1.PullIfNotPresent}}
		},
		fix:  setRuntimeImage("e2e.local/qemu-runtime:e2e"),
		want: vtv1alpha1.ReasonImagePullFailed,
		seen: func(cs corev1.ContainerStatus) bool {
			return cs.State.Waiting != nil && cs.State.Waiting.Reason == "ImagePullBackOff"
		},
		seenWhat: "ImagePullBackOff after ErrImagePull",
	}, {
		name: "runtime-exits-1",
		breakIt: func(t *testing.T, _ *vtv1alpha1.VirtualTargetClass, set *vtv1alpha1.ExporterSet) {
			set.Spec.Images = &vtv1alpha1.Images{Runtime: &vtv1alpha1.ImageSpec{Image: "e2e.local/qemu-runtime:crash"}}
		},
		fix:  setRuntimeImage("e2e.local/qemu-runtime:e2e"),
		want: vtv1alpha1.ReasonTargetCrashing,
		// The pool replaces a crashed target at its first exit, so whether the kubelet gets to
		// restart it once more (CrashLoopBackOff) before the Pod goes is a race; the exit
		// itself is what the kubelet must show.
		seen: func(cs corev1.ContainerStatus) bool {
			return cs.Name == "target-runtime" && (exitedWith(cs.State.Terminated, 1) || exitedWith(cs.LastTerminationState.Terminated, 1))
		},
		seenWhat: "the runtime's exit code 1 in its container status",
	}, {
		name: "too-much-cpu",
		breakIt: func(t *testing.T, cls *vtv1alpha1.VirtualTargetClass, _ *vtv1alpha1.ExporterSet) {
			cls.Spec.Scheduling.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("64")
		},
		fix: func(t *testing.T, ns string) {
			patchClass(t, ns, func(c *vtv1alpha1.VirtualTargetClass) {
				c.Spec.Scheduling.Resources.Requests[corev1.ResourceCPU] = resource.MustParse("100m")
			})
		},
		want: vtv1alpha1.ReasonUnschedulable,
	}, {
		name: "no-device-plugin",
		breakIt: func(t *testing.T, _ *vtv1alpha1.VirtualTargetClass, _ *vtv1alpha1.ExporterSet) {
			nd.StopDevicePlugin()
			waitKVMAllocatable(t, false)
		},
		fix: func(t *testing.T, _ string) {
			if err := nd.StartDevicePlugin(); err != nil {
				t.Fatal(err)
			}
			waitKVMAllocatable(t, true)
		},
		want: vtv1alpha1.ReasonUnschedulable,
	}, {
		name: "config-unreadable",
		breakIt: func(t *testing.T, _ *vtv1alpha1.VirtualTargetClass, set *vtv1alpha1.ExporterSet) {
			// The CA the exporter config carries is no PEM bundle: the exporter cannot use
			// its config and exits.
			setCA(t, set.Namespace, "not a certificate")
		},
		fix: func(t *testing.T, ns string) {
			setCA(t, ns, coreCA[ns])
		},
		want: vtv1alpha1.ReasonTargetCrashing,
	}} {
		t.Run(f.name, func(t *testing.T) { runFailure(t, f) })
	}
}

func runFailure(t *testing.T, f failure) {
	ns := newNamespace(t, f.name)
	startCore(t, ns)
	cls, set := smallPool(ns, f.name)
	f.breakIt(t, cls, set)
	for _, o := range []client.Object{cls, set} {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// The container state is looked for from the start: a Pod the pool replaces may be gone
	// by the time the set reports Degraded.
	seen := ""
	spot := func(pods []corev1.Pod) {
		if f.seen == nil || seen != "" {
			return
		}
		for _, p := range pods {
			for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
				if f.seen(cs) {
					seen = fmt.Sprintf("%s %s: %s (restarts %d)", p.Name, cs.Name, stateText(cs.State), cs.RestartCount)
					return
				}
			}
		}
	}
	var degraded metav1.Condition
	testproc.WaitFor(t, 3*time.Minute, fmt.Sprintf("Degraded=True %s", f.want), func() (bool, string) {
		pods := podsOf(t, ns)
		spot(pods)
		s := getSet(t, ns, set.Name)
		degraded = condition(s, string(vtv1alpha1.ConditionDegraded))
		return degraded.Status == metav1.ConditionTrue && reports(degraded, f.want),
			fmt.Sprintf("Degraded=%s %s: %s; pods:%s", degraded.Status, degraded.Reason, degraded.Message, describePods(pods))
	})
	if a := condition(getSet(t, ns, set.Name), string(vtv1alpha1.ConditionAvailable)); a.Status == metav1.ConditionTrue {
		t.Errorf("Available=True (%s) while every instance fails", a.Reason)
	}
	if f.seen != nil {
		testproc.WaitFor(t, 2*time.Minute, f.seenWhat, func() (bool, string) {
			pods := podsOf(t, ns)
			spot(pods)
			return seen != "", describePods(pods)
		})
		t.Logf("FIDELITY %s: %s", f.name, seen)
		degraded = condition(getSet(t, ns, set.Name), string(vtv1alpha1.ConditionDegraded))
	}
	t.Logf("FIDELITY %s: Degraded %s: %s", f.name, degraded.Reason, degraded.Message)
	t.Logf("FIDELITY %s: pods:%s", f.name, describePods(podsOf(t, ns)))
	f.fix(t, ns)
	testproc.WaitFor(t, 4*time.Minute, "the pool to recover (Available=True)", func() (bool, string) {
		s := getSet(t, ns, set.Name)
		a := condition(s, string(vtv1alpha1.ConditionAvailable))
		return a.Status == metav1.ConditionTrue, fmt.Sprintf("Available=%s %s: %s; pods:%s", a.Status, a.Reason, a.Message, describePods(podsOf(t, ns)))
	})
}

// reports says whether Degraded names want: as its reason, or, once instances failing that
// way are replaced quickly enough to back off, as the last failure BackingOff quotes.
func reports(c metav1.Condition, want vtv1alpha1.ConditionReason) bool {
	if c.Reason == string(want) {
		return true
	}
	return c.Reason == string(vtv1alpha1.ReasonBackingOff) && strings.Contains(c.Message, ": "+string(want)+": ")
}

// smallPool is a class and set like upstream's samples with requests small enough that
// several Pods fit on the 2-CPU node beside each other.
func smallPool(ns, board string) (*vtv1alpha1.VirtualTargetClass, *vtv1alpha1.ExporterSet) {
	cls := &vtv1alpha1.VirtualTargetClass{
		ObjectMeta: metav1.ObjectMeta{Name: "small", Namespace: ns},
		Spec: vtv1alpha1.VirtualTargetClassSpec{
			Provisioner: "qemu.jumpstarter.dev",
			Parameters:  &apiextensionsv1.JSON{Raw: []byte(`{"arch":"x86_64","resources":{"cpu":1,"memory":"256Mi","storage":"1Gi"}}`)},
			Scheduling: &vtv1alpha1.Scheduling{
				NodeSelector: map[string]string{"kubernetes.io/arch": goarch()},
				Resources: &corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{"devices.kubevirt.io/kvm": resource.MustParse("1")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				},
			},
		},
	}
	labels := map[string]string{"board": board}
	set := &vtv1alpha1.ExporterSet{
		ObjectMeta: metav1.ObjectMeta{Name: "pool", Namespace: ns},
		Spec: vtv1alpha1.ExporterSetSpec{
			VirtualTargetClassName: cls.Name,
			MinAvailableReplicas:   1,
			MaxReplicas:            ptr.To[int32](2),
			Selector:               metav1.LabelSelector{MatchLabels: labels},
			Template: vtv1alpha1.ExporterTemplate{
				Metadata: vtv1alpha1.ExporterTemplateMetadata{Labels: labels},
				Spec: vtv1alpha1.ExporterTemplateSpec{Drivers: []vtv1alpha1.DriverSpec{
					{Name: "qemu", Type: "jumpstarter_driver_qemu.driver.Qemu"},
				}},
			},
		},
	}
	return cls, set
}

// exitedWith says whether t is a termination with exit code code.
func exitedWith(t *corev1.ContainerStateTerminated, code int32) bool {
	return t != nil && t.ExitCode == code
}

// setCA writes the namespace's Jumpstarter CA ConfigMap.
func setCA(t *testing.T, ns, pem string) {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: exporterset.DefaultCAConfigMap, Namespace: ns}}
	_, err := controllerutil.CreateOrUpdate(ctx, env.Client, cm, func() error {
		cm.Data = map[string]string{exporterset.DefaultCAKey: pem}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// setRuntimeImage returns a fix that points the set's runtime image at image.
func setRuntimeImage(image string) func(t *testing.T, ns string) {
	return func(t *testing.T, ns string) {
		patchSet(t, ns, func(s *vtv1alpha1.ExporterSet) {
			s.Spec.Images = &vtv1alpha1.Images{Runtime: &vtv1alpha1.ImageSpec{Image: image}}
		})
	}
}

func patchSet(t *testing.T, ns string, change func(*vtv1alpha1.ExporterSet)) {
	t.Helper()
	patchNamed(t, ns, "pool", &vtv1alpha1.ExporterSet{}, func(o client.Object) { change(o.(*vtv1alpha1.ExporterSet)) })
}

func patchClass(t *testing.T, ns string, change func(*vtv1alpha1.VirtualTargetClass)) {
	t.Helper()
	patchNamed(t, ns, "small", &vtv1alpha1.VirtualTargetClass{}, func(o client.Object) { change(o.(*vtv1alpha1.VirtualTargetClass)) })
}

// waitKVMAllocatable waits until the node offers KVM devices (want) or none.
func waitKVMAllocatable(t *testing.T, want bool) {
	t.Helper()
	testproc.WaitFor(t, time.Minute, fmt.Sprintf("KVM allocatable on the node: %v", want), func() (bool, string) {
		var n corev1.Node
		if err := env.Client.Get(ctx, client.ObjectKey{Name: node.Name}, &n); err != nil {
			return false, err.Error()
		}
		q := n.Status.Allocatable["devices.kubevirt.io/kvm"]
		return (q.Value() > 0) == want, "allocatable " + q.String()
	})
}
