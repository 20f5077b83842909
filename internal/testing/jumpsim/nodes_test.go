package jumpsim

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// samplePod is exporterPod with the sample class's scheduling: amd64 nodes, the KVM
// toleration, one KVM device, 2 CPUs and 2Gi.
func samplePod(ex *jsv1.Exporter, name string) *corev1.Pod {
	pod := exporterPod(ex, name)
	pod.Spec.NodeSelector = map[string]string{"kubernetes.io/arch": "amd64"}
	pod.Spec.Tolerations = []corev1.Toleration{{Key: "jumpstarter.dev/kvm", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{KVMResource: resource.MustParse("1")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("2Gi")},
	}
	pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(ex, jsv1.GroupVersion.WithKind("Exporter"))}
	return pod
}

func createSamplePod(t *testing.T, ex *jsv1.Exporter, name string, edit func(*corev1.Pod)) {
	t.Helper()
	pod := samplePod(ex, name)
	if edit != nil {
		edit(pod)
	}
	if err := env.Client.Create(testCtx(t), pod); err != nil {
		t.Fatal(err)
	}
}

func waitUnschedulable(t *testing.T, ns, name, message string) {
	t.Helper()
	waitPod(t, ns, name, 10*time.Second, func(p *corev1.Pod) error {
		c := podCondition(p, corev1.PodScheduled)
		if c.Status != corev1.ConditionFalse || c.Reason != "Unschedulable" || c.Message != message {
			return fmt.Errorf("PodScheduled %+v", c)
		}
		if p.Spec.NodeName != "" || p.Status.Phase != corev1.PodPending {
			return fmt.Errorf("node %q phase %s", p.Spec.NodeName, p.Status.Phase)
		}
		return nil
	})
}

// A node without the KVM device plugin: the sample class's Pods wait Unschedulable, and run
// once the node advertises KVM; accounting keeps a second Pod out until the first ends.
func TestUnschedulableUntilCapacity(t *testing.T) {
	t.Parallel()
	nodeName := fmt.Sprintf("jumpsim-nokvm-%d", time.Now().UnixNano())
	small := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("8"), corev1.ResourceMemory: resource.MustParse("16Gi"), corev1.ResourcePods: resource.MustParse("110"),
	}
	sim, ns := startSim(t, WithNodeName(nodeName), WithNodeCapacity(small))
	ctx := testCtx(t)
	node := getObj(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}})
	if node.Labels["kubernetes.io/arch"] != "amd64" || node.Labels["kubernetes.io/hostname"] != nodeName {
		t.Fatalf("node labels %v", node.Labels)
	}
	if _, ok := node.Status.Allocatable[KVMResource]; ok {
		t.Fatalf("allocatable %v", node.Status.Allocatable)
	}
	ex := createExporter(t, ns, "kvm", nil)
	createConfigSecret(t, ex, false)
	createSamplePod(t, ex, "kvm-a", nil)
	// The node has no KVM at all: no preemption could help (the real scheduler's words,
	// seen on the real-node tier).
	waitUnschedulable(t, ns, "kvm-a", "0/1 nodes are available: 1 Insufficient devices.kubevirt.io/kvm. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")

	withKVM := small.DeepCopy()
	withKVM[KVMResource] = resource.MustParse("1")
	if err := sim.SetNodeCapacity(ctx, withKVM); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitPodPhase(ctx, ns, "kvm-a", corev1.PodRunning); err != nil {
		t.Fatal(err)
	}
	if p := getObj(t, podObj(ns, "kvm-a")); podCondition(p, corev1.PodScheduled).Status != corev1.ConditionTrue || p.Spec.NodeName != nodeName {
		t.Fatalf("PodScheduled %+v on %q", podCondition(p, corev1.PodScheduled), p.Spec.NodeName)
	}

	// The one device is taken; a Pod that also wants more CPU than is left lacks both, and
	// evicting kvm-a would free them: preemption is tried and finds no victim of lower
	// priority.
	createSamplePod(t, ex, "kvm-b", func(p *corev1.Pod) {
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("7")
	})
	waitUnschedulable(t, ns, "kvm-b", "0/1 nodes are available: 1 Insufficient cpu, 1 Insufficient devices.kubevirt.io/kvm. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.")
	if err := sim.FailPod(ctx, ns, "kvm-a"); err != nil {
		t.Fatal(err)
	}
	// kvm-a no longer counts; 7 CPUs fit into 8.
	if _, err := sim.WaitPodPhase(ctx, ns, "kvm-b", corev1.PodRunning); err != nil {
		t.Fatal(err)
	}
	waitCount(t, sim, ActionPodUnschedulable, 2)
}

func TestUnschedulableTaintsAndSelector(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t, WithNodeName(fmt.Sprintf("jumpsim-tainted-%d", time.Now().UnixNano())))
	ctx := testCtx(t)
	taint := corev1.Taint{Key: "dedicated", Value: "ci", Effect: corev1.TaintEffectNoSchedule}
	if err := sim.SetNodeTaints(ctx, []corev1.Taint{taint}); err != nil {
		t.Fatal(err)
	}
	ex := createExporter(t, ns, "t", nil)
	createConfigSecret(t, ex, false)
	createSamplePod(t, ex, "untolerant", nil)
	createSamplePod(t, ex, "arm", func(p *corev1.Pod) {
		p.Spec.NodeSelector["kubernetes.io/arch"] = "arm64"
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "dedicated", Value: "ci", Effect: corev1.TaintEffectNoSchedule})
	})
	createSamplePod(t, ex, "affinity", func(p *corev1.Pod) {
		p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: "dedicated", Operator: corev1.TolerationOpExists})
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/os", Operator: corev1.NodeSelectorOpIn, Values: []string{"linux"}}}}},
		}}}
	})
	waitUnschedulable(t, ns, "untolerant", "0/1 nodes are available: 1 node(s) had untolerated taint(s). preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")
	waitUnschedulable(t, ns, "arm", "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")
	if _, err := sim.WaitPodPhase(ctx, ns, "affinity", corev1.PodRunning); err != nil {
		t.Fatal(err)
	}
	if err := sim.SetNodeTaints(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitPodPhase(ctx, ns, "untolerant", corev1.PodRunning); err != nil {
		t.Fatal(err)
	}
}

func TestLoseAndRestoreNode(t *testing.T) {
	t.Parallel()
	nodeName := fmt.Sprintf("jumpsim-lost-%d", time.Now().UnixNano())
	sim, ns := startSim(t, WithNodeName(nodeName), WithOnlineTimeout(time.Second))
	ctx := testCtx(t)
	ex := startExporter(t, sim, ns, "far", nil, false)
	lost := time.Now() // LoseNode takes its own time inside, after this
	if err := sim.LoseNode(ctx); err != nil {
		t.Fatal(err)
	}
	pod := waitPod(t, ns, "far", 10*time.Second, func(p *corev1.Pod) error {
		if p.Status.Phase != corev1.PodUnknown {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})
	if pod.Status.Reason != "NodeLost" || podCondition(pod, corev1.PodReady).Status != corev1.ConditionFalse {
		t.Fatalf("reason %q Ready %+v", pod.Status.Reason, podCondition(pod, corev1.PodReady))
	}
	node := getObj(t, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}})
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && (c.Status != corev1.ConditionUnknown || c.Message != "Kubelet stopped posting node status.") {
			t.Fatalf("node Ready %+v", c)
		}
	}
	e, err := sim.WaitExporter(ctx, ns, "far", offline)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(lost); d < 800*time.Millisecond {
		t.Fatalf("offline %s after the node was lost, before the online timeout", d)
	}
	if c := meta.FindStatusCondition(e.Status.Conditions, jsv1.ExporterConditionOnline); c.Reason != "Seen" || c.Message != "Last seen more than 1s ago" {
		t.Fatalf("Online %+v", c)
	}
	// New Pods do not go to an unreachable node.
	createPod(t, ex, "far-2")
	waitUnschedulable(t, ns, "far-2", "0/1 nodes are available: 1 node(s) had untolerated taint(s). preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.")

	if err := sim.RestoreNode(ctx); err != nil {
		t.Fatal(err)
	}
	waitPod(t, ns, "far", 10*time.Second, func(p *corev1.Pod) error {
		if p.Status.Phase != corev1.PodRunning || podCondition(p, corev1.PodReady).Status != corev1.ConditionTrue {
			return fmt.Errorf("phase %s Ready %+v", p.Status.Phase, podCondition(p, corev1.PodReady))
		}
		return nil
	})
	if _, err := sim.WaitExporterReady(ctx, ns, "far"); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitPodPhase(ctx, ns, "far-2", corev1.PodRunning); err != nil {
		t.Fatal(err)
	}
}

func TestPodRequestsWithSidecars(t *testing.T) {
	t.Parallel()
	cpu := func(v string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(v)}}
	}
	always := corev1.ContainerRestartPolicyAlways
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{
			{Name: "sidecar", Resources: cpu("1"), RestartPolicy: &always},
			{Name: "big-init", Resources: cpu("4")},
		},
		Containers: []corev1.Container{{Name: "main", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			Limits:   corev1.ResourceList{KVMResource: resource.MustParse("1")},
		}}},
		Overhead: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
	}}
	got := podRequests(pod)
	// max(main 2 + sidecar 1, sidecar 1 + init 4) + overhead.
	if got[corev1.ResourceCPU] != 5100 || got[KVMResource] != 1 || got[corev1.ResourcePods] != 1 {
		t.Fatalf("requests %v", got)
	}
	pod.Spec.InitContainers[1].Resources = cpu("500m")
	if got := podRequests(pod); got[corev1.ResourceCPU] != 3100 {
		t.Fatalf("requests %v", got)
	}
}

func TestNormalizeImage(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"busybox":              "docker.io/library/busybox:latest",
		"busybox:1.36":         "docker.io/library/busybox:1.36",
		"org/app":              "docker.io/org/app:latest",
		"quay.io/a/b":          "quay.io/a/b:latest",
		"localhost:5000/x":     "localhost:5000/x:latest",
		"quay.io/a/b@sha256:0": "quay.io/a/b@sha256:0",
	} {
		if got := normalizeImage(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}
