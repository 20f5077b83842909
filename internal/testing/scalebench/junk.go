package scalebench

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// nsJunk holds the memory check's unrelated objects. The simulator does not serve it: its
// Pods stay Pending, unbound, as on a cluster whose nodes are elsewhere, and its Exporters
// keep the status they were given.
const nsJunk = "junk"

// junkParallelism bounds the creates in flight; the benchmark's client is not rate-limited.
const junkParallelism = 64

// JunkCounts is how many unrelated objects of each kind the memory check created.
type JunkCounts struct {
	Pods      int `json:"pods"`
	Secrets   int `json:"secrets"`
	Exporters int `json:"exporters"`
}

// String names the counts for the report.
func (c JunkCounts) String() string {
	return fmt.Sprintf("%d unrelated Pods, %d Secrets and %d Exporters", c.Pods, c.Secrets, c.Exporters)
}

// createJunk creates pods small Pods and as many Secrets, and exporters Exporters, in
// nsJunk, and returns what it created.
func (b *Bench) createJunk(ctx context.Context, pods, exporters int) (JunkCounts, error) {
	if err := createNamespaces(ctx, b.cluster.Client, []string{nsJunk}); err != nil {
		return JunkCounts{}, err
	}
	err := forEach(ctx, 2*pods, junkParallelism, func(i int) error {
		meta := metav1.ObjectMeta{Name: fmt.Sprintf("junk-%05d", i/2), Namespace: nsJunk, Labels: map[string]string{"app": "unrelated"}}
		var o client.Object
		if i%2 == 0 {
			o = &corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}}}
		} else {
			o = &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"password": []byte(fmt.Sprintf("secret-%05d", i/2))}}
		}
		return createAll(ctx, b.cluster.Client, o)
	})
	if err != nil {
		return JunkCounts{}, err
	}
	err = forEach(ctx, exporters, junkParallelism, func(i int) error {
		return b.createJunkExporter(ctx, i)
	})
	if err != nil {
		return JunkCounts{}, err
	}
	return JunkCounts{Pods: pods, Secrets: pods, Exporters: exporters}, nil
}

// createJunkExporter creates the i-th unrelated Exporter: owned by no ExporterSet, with no
// label of ours, and then given the status a registered, online exporter of another team
// has (credential, endpoint, conditions, a few devices), so that each cached copy is as big
// as on a real cluster, not an empty shell.
func (b *Bench) createJunkExporter(ctx context.Context, i int) error {
	name := fmt.Sprintf("junk-exporter-%05d", i)
	e := &jumpstarterv1alpha1.Exporter{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: nsJunk, Labels: map[string]string{
			"app": "unrelated", "board": "rpi4", "lab": fmt.Sprintf("lab-%d", i%8),
		}},
		Spec: jumpstarterv1alpha1.ExporterSpec{Username: ptr.To("oidc:" + name)},
	}
	if err := createAll(ctx, b.cluster.Client, e); err != nil {
		return err
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	e.Status = jumpstarterv1alpha1.ExporterStatus{
		Conditions: []metav1.Condition{
			{Type: jumpstarterv1alpha1.ExporterConditionRegistered, Status: metav1.ConditionTrue, Reason: "Register", Message: "exporter registered", LastTransitionTime: now},
			{Type: jumpstarterv1alpha1.ExporterConditionOnline, Status: metav1.ConditionTrue, Reason: "Seen", Message: "last seen less than 1 minute ago", LastTransitionTime: now},
		},
		Credential:          &corev1.LocalObjectReference{Name: name + "-exporter"},
		Endpoint:            "grpc.jumpstarter.example:443",
		LastSeen:            now,
		ExporterStatusValue: jumpstarterv1alpha1.ExporterStatusAvailable,
	}
	for d, kind := range []string{"power", "serial", "storage"} {
		e.Status.Devices = append(e.Status.Devices, jumpstarterv1alpha1.Device{
			Uuid:   fmt.Sprintf("%08x-0000-4000-8000-%012x", i, d),
			Labels: map[string]string{"jumpstarter.dev/client": "jumpstarter_driver_" + kind, "jumpstarter.dev/name": kind},
		})
	}
	// createAll tolerates an Exporter left by an earlier attempt; its status is then read
	// back first, so the update carries a current resourceVersion.
	if e.ResourceVersion == "" {
		st := e.Status
		if err := b.cluster.Client.Get(ctx, client.ObjectKeyFromObject(e), e); err != nil {
			return err
		}
		e.Status = st
	}
	if err := b.cluster.Client.Status().Update(ctx, e); err != nil {
		return fmt.Errorf("writing the status of Exporter %s: %w", name, err)
	}
	return nil
}
