package exporterset

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/internal/state"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// podStatus gives the instance a Pod created at epoch with this status and the QEMU layout's
// container names and images.
func podStatus(st corev1.PodStatus) fixture.Trait {
	return func(in *pool.Instance) {
		in.Pods = append(in.Pods, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: in.Name(), Namespace: "ns", CreationTimestamp: metav1.NewTime(fixture.Epoch)},
			Spec: corev1.PodSpec{
				NodeName:       "node-1",
				InitContainers: []corev1.Container{{Name: "target-runtime", Image: "example.com/runtime:1"}},
				Containers:     []corev1.Container{{Name: "exporter", Image: "example.com/exporter:1"}},
			},
			Status: st,
		})
	}
}

func waiting(name, reason, msg string, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, RestartCount: restarts, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: msg}}}
}

func runningAt(name string, d time.Duration) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(fixture.Epoch.Add(d))}}}
}

func TestDiagnose(t *testing.T) {
	d := diagnosis{now: fixture.Epoch.Add(2 * time.Minute), startupDeadline: 10 * time.Minute, registrationGrace: time.Minute}
	pullMsg := `failed to pull and unpack image "example.com/runtime:1": not found`
	schedMsg := "0/1 nodes are available: 1 Insufficient devices.kubevirt.io/kvm. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
	cases := []struct {
		name string
		in   *pool.Instance
		at   time.Duration // added to d.now
		want *pool.Problem
	}{
		{name: "no pod yet", in: fixture.Instance("a"), want: nil},
		{name: "ready", in: fixture.Instance("a", fixture.Online, fixture.Registered, podStatus(corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{runningAt("exporter", 0)}})), want: nil},
		{
			name: "image pull back-off on the runtime sidecar",
			in: fixture.Instance("a", podStatus(corev1.PodStatus{Phase: corev1.PodPending,
				InitContainerStatuses: []corev1.ContainerStatus{waiting("target-runtime", "ImagePullBackOff", `Back-off pulling image "example.com/runtime:1": ErrImagePull: `+pullMsg, 0)}})),
			want: &pool.Problem{Reason: vtv1alpha1.ReasonImagePullFailed, Container: "target-runtime", Image: "example.com/runtime:1",
				Message: `ImagePullBackOff: Back-off pulling image "example.com/runtime:1": ErrImagePull: ` + pullMsg},
		},
		{
			name: "unschedulable",
			in: fixture.Instance("a", podStatus(corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: schedMsg}}})),
			want: &pool.Problem{Reason: vtv1alpha1.ReasonUnschedulable, Message: schedMsg},
		},
		{
			name: "sidecar crash loop: replaced even though the exporter registered",
			in: fixture.Instance("a", fixture.Online, fixture.Registered, podStatus(corev1.PodStatus{Phase: corev1.PodRunning,
				InitContainerStatuses: []corev1.ContainerStatus{func() corev1.ContainerStatus {
					cs := waiting("target-runtime", "CrashLoopBackOff", "back-off 20s restarting failed container", 3)
					cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}
					return cs
				}()},
				ContainerStatuses: []corev1.ContainerStatus{runningAt("exporter", 0)}})),
			want: &pool.Problem{Reason: vtv1alpha1.ReasonTargetCrashing, Container: "target-runtime", Image: "example.com/runtime:1",
				Message: "CrashLoopBackOff after 3 restarts; last exit: exit code 137 (OOMKilled): back-off 20s restarting failed container", Replace: true},
		},
		{
			name: "a crash-looping sidecar between two crashes: running again, still crashing",
			in: fixture.Instance("a", fixture.Online, fixture.Registered, podStatus(corev1.PodStatus{Phase: corev1.PodRunning,
				InitContainerStatuses: []corev1.ContainerStatus{func() corev1.ContainerStatus {
					cs := runningAt("target-runtime", time.Minute)
					cs.RestartCount = 2
					cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: metav1.NewTime(fixture.Epoch.Add(time.Minute))}
					return cs
				}()},
				ContainerStatuses: []corev1.ContainerStatus{runningAt("exporter", 0)}})),
			want: &pool.Problem{Reason: vtv1alpha1.ReasonTargetCrashing, Container: "target-runtime", Image: "example.com/runtime:1",
				Message: "restarted 2 times; last exit: exit code 1 (Error)", Replace: true},
		},
		{
			name: "a container that crashed long ago and has run since is healthy",
			in: fixture.Instance("a", fixture.Online, fixture.Registered, podStatus(corev1.PodStatus{Phase: corev1.PodRunning,
				InitContainerStatuses: []corev1.ContainerStatus{func() corev1.ContainerStatus {
					cs := runningAt("target-runtime", 0)
					cs.RestartCount = 1
					cs.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: metav1.NewTime(fixture.Epoch)}
					return cs
				}()},
				ContainerStatuses: []corev1.ContainerStatus{runningAt("exporter", 0)}})),
			at:   10 * time.Minute,
			want: nil,
		},
		{
			name: "exporter terminated with an error: Pod Failed",
			in: fixture.Instance("a", podStatus(corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
				{Name: "exporter", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", Message: "boom"}}}}})),
			want: &pool.Problem{Reason: vtv1alpha1.ReasonTargetCrashing, Container: "exporter", Image: "example.com/exporter:1", Message: "terminated: exit code 1 (Error): boom", Replace: true},
		},
		{
			// A real kubelet quotes the termination log as written: with its newline, and
			// with several lines when the program wrote them.
			name: "termination message of several lines, as a real kubelet reports it",
			in: fixture.Instance("a", podStatus(corev1.PodStatus{Phase: corev1.PodFailed, ContainerStatuses: []corev1.ContainerStatus{
				{Name: "exporter", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
					Message: "exporter config /etc/jumpstarter/exporters/config.yaml: tls.ca holds no PEM certificate\n\n  retrying\n"}}}}})),
			want: &pool.Problem{Reason: vtv1alpha1.ReasonTargetCrashing, Container: "exporter", Image: "example.com/exporter:1",
				Message: "terminated: exit code 1 (Error): exporter config /etc/jumpstarter/exporters/config.yaml: tls.ca holds no PEM certificate; retrying", Replace: true},
		},
		{
			name: "evicted",
			in:   fixture.Instance("a", podStatus(corev1.PodStatus{Phase: corev1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory."})),
			want: &pool.Problem{Reason: vtv1alpha1.ReasonEvicted, Message: "The node was low on resource: memory.", Replace: true},
		},
		{
			name: "node lost",
			in:   fixture.Instance("a", podStatus(corev1.PodStatus{Phase: corev1.PodUnknown})),
			want: &pool.Problem{Reason: vtv1alpha1.ReasonNodeLost, Message: `node "node-1" stopped reporting the Pod's state`, Replace: true},
		},
		{
			name: "exit after a lease is recycling, not a failure",
			in:   fixture.Instance("a", podStatus(corev1.PodStatus{Phase: corev1.PodSucceeded})),
			want: nil,
		},
		{
			name: "running, not registered, within the grace",
			in:   fixture.Instance("a", podStatus(corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{runningAt("exporter", 90*time.Second)}})),
			want: nil,
		},
		{
			name: "running, not registered, past the grace",
			in: fixture.Instance("a", func(in *pool.Instance) { in.Exporter.Status.Endpoint = "grpc.example:443" },
				podStatus(corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{runningAt("exporter", 30*time.Second)}})),
			want: &pool.Problem{Reason: vtv1alpha1.ReasonNotRegistering, Message: `the Pod has run for 1m30s but the exporter has not registered with the Jumpstarter controller at "grpc.example:443"`},
		},
		{
			name: "pending past the startup deadline",
			in:   fixture.Instance("a", podStatus(corev1.PodStatus{Phase: corev1.PodPending})),
			at:   10 * time.Minute,
			want: &pool.Problem{Reason: vtv1alpha1.ReasonStartupDeadlineExceeded, Message: "Pod a is Pending and its exporter is not ready (not ready 12m0s after its Pod was created; startupDeadline 10m0s)", Replace: true},
		},
		{
			name: "a pull failure past the deadline keeps its reason and is replaced",
			in: fixture.Instance("a", podStatus(corev1.PodStatus{Phase: corev1.PodPending,
				ContainerStatuses: []corev1.ContainerStatus{waiting("exporter", "ErrImagePull", "not found", 0)}})),
			at: 10 * time.Minute,
			want: &pool.Problem{Reason: vtv1alpha1.ReasonImagePullFailed, Container: "exporter", Image: "example.com/exporter:1",
				Message: "ErrImagePull: not found (not ready 12m0s after its Pod was created; startupDeadline 10m0s)", Replace: true},
		},
		{
			name: "a retiring instance no longer counts",
			in:   fixture.Instance("a", fixture.Retiring, podStatus(corev1.PodStatus{Phase: corev1.PodUnknown})),
			want: nil,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dd := d
			dd.now = d.now.Add(tc.at)
			if diff := cmp.Diff(tc.want, dd.diagnose(tc.in)); diff != "" {
				t.Errorf("diagnose (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSummarizeFailures(t *testing.T) {
	pull := &pool.Problem{Reason: vtv1alpha1.ReasonImagePullFailed, Container: "target-runtime", Image: "example.com/runtime:bad", Message: "ErrImagePull: not found"}
	crash := &pool.Problem{Reason: vtv1alpha1.ReasonTargetCrashing, Container: "exporter", Message: "terminated: exit code 1"}
	instances := []*pool.Instance{
		fixture.Instance("a", fixture.WithProblem(pull)), fixture.Instance("b", fixture.WithProblem(pull)), fixture.Instance("c", fixture.WithProblem(crash)), fixture.Instance("d", fixture.Ready),
	}
	s := summarizeFailures(instances, fixture.ProblemsOf(instances))
	want := `2 of 4 instances cannot pull an image; e.g. instance a, container target-runtime, image "example.com/runtime:bad": ErrImagePull: not found (also: 1 TargetCrashing)`
	if s.Reason != vtv1alpha1.ReasonImagePullFailed || s.Failing != 3 || s.Serving != 1 || s.message() != want {
		t.Errorf("summary %+v\nmessage %q\nwant    %q", s, s.message(), want)
	}
	if s := summarizeFailures([]*pool.Instance{fixture.Instance("a", fixture.Ready)}, nil); s.Reason != "" || s.message() != "" || s.Serving != 1 {
		t.Errorf("healthy pool summarized as %+v", s)
	}
}

func TestFailureBackoff(t *testing.T) {
	mem := newMemory(state.NewMemory())
	m := failureMemory{mem.failures, mem.instFailures}
	base, limit := 2*time.Second, 20*time.Second
	crashing := func(name string) *pool.Instance {
		return fixture.Instance(name, fixture.WithProblem(&pool.Problem{Reason: vtv1alpha1.ReasonTargetCrashing, Replace: true}))
	}
	now := fixture.Epoch
	// Each new failing instance doubles the wait; the same instance seen again does not count.
	var b pool.Backoff
	for i, want := range []time.Duration{2, 4, 8, 16, 20, 20} {
		name := string(rune('a' + i))
		b = observeFixtures(m, "ns/s", "v1", now, []*pool.Instance{crashing(name)}, base, limit)
		b = observeFixtures(m, "ns/s", "v1", now, []*pool.Instance{crashing(name)}, base, limit)
		if got := b.Until.Sub(now); got != want*time.Second || b.Failures != i+1 {
			t.Fatalf("failure %d: waits %s with %d failures, want %s", i+1, got, b.Failures, want*time.Second)
		}
		if !b.Active(now) || b.Active(b.Until) {
			t.Fatalf("failure %d: active at now=%v, at until=%v", i+1, b.Active(now), b.Active(b.Until))
		}
	}
	if !strings.Contains(b.Message(now), "next attempt at 2026-01-01T00:00:20Z") {
		t.Errorf("message %q does not say when the next attempt is", b.Message(now))
	}
	// A change of the set or class resets it at once.
	if b = observeFixtures(m, "ns/s", "v2", now, nil, base, limit); b.Failures != 0 || b.Active(now) {
		t.Errorf("after a spec change: %+v", b)
	}
	// So does an instance becoming ready.
	observeFixtures(m, "ns/s", "v2", now, []*pool.Instance{crashing("x")}, base, limit)
	if b = observeFixtures(m, "ns/s", "v2", now, []*pool.Instance{fixture.Instance("y", fixture.Ready)}, base, limit); b.Failures != 0 {
		t.Errorf("after an instance became ready: %+v", b)
	}
	// A failed instance on its way out (retiring: not diagnosed, still registered) is no
	// proof that the spec works.
	observeFixtures(m, "ns/s", "v2", now, []*pool.Instance{crashing("r")}, base, limit)
	if b = observeFixtures(m, "ns/s", "v2", now, []*pool.Instance{fixture.Instance("r", fixture.Ready, fixture.Retiring)}, base, limit); b.Failures != 1 {
		t.Errorf("a retiring failed instance reset the backoff: %+v", b)
	}
	observeFixtures(m, "ns/s", "v2", now, []*pool.Instance{fixture.Instance("q", fixture.Ready)}, base, limit)
	// An instance that was ready and then fails (evicted after serving) is no start failure.
	observeFixtures(m, "ns/s", "v2", now, []*pool.Instance{fixture.Instance("z", fixture.Ready)}, base, limit)
	evicted := fixture.Instance("z", fixture.WithProblem(&pool.Problem{Reason: vtv1alpha1.ReasonEvicted, Replace: true}))
	if b = observeFixtures(m, "ns/s", "v2", now, []*pool.Instance{evicted}, base, limit); b.Failures != 0 {
		t.Errorf("an eviction after ready counted as a failure: %+v", b)
	}
	if len(b.New) != 1 || b.New[0].Reason != vtv1alpha1.ReasonEvicted {
		t.Errorf("new problems %+v, want the eviction", b.New)
	}
	// InPlaceReuse: the same instance whose fresh Pods keep failing counts each Pod.
	observeFixtures(m, "ns/s", "v3", now, nil, base, limit)
	for i, podUID := range []string{"p1", "p1", "p2", "p3"} {
		in := crashing("ipr")
		in.Pods = []*corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "ipr", UID: types.UID(podUID)}}}
		b = observeFixtures(m, "ns/s", "v3", now, []*pool.Instance{in}, base, limit)
		if want := []int{1, 1, 2, 3}[i]; b.Failures != want {
			t.Fatalf("pod %s: %d failures, want %d", podUID, b.Failures, want)
		}
	}
	// An instance's record goes with the instance (memory's one sweep), the set's with the
	// set (its one forget).
	if mem.instFailures.Size() == 0 {
		t.Fatal("no instance's failure record was kept: the checks below cannot fail")
	}
	mem.Sweep("ns/s", nil, mem.Mark())
	if n := mem.instFailures.Size(); n != 0 {
		t.Errorf("a sweep that saw no instance kept %d instance failure records", n)
	}
	mem.Forget("ns/s")
	if mem.failures.Holds("ns/s") {
		t.Error("forget kept the set's failure count")
	}
}
