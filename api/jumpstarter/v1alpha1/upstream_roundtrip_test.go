package v1alpha1_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/testenv"
)

var env *testenv.Env

// TestMain runs this package against upstream Jumpstarter's Exporter and Lease CRDs, installed
// in place of ours, so the Go types are shown to be wire-compatible with a real cluster.
func TestMain(m *testing.M) {
	if _, err := testenv.UpstreamCRDDir(); err != nil {
		if os.Getenv("CI") == "true" {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "skipped: upstream CRD round-trip tests: %v\n", err)
		os.Exit(0)
	}
	up, _ := testenv.UpstreamCRDDir()
	testenv.Main(m, &env, testenv.WithUpstreamJumpstarterCRDs(), testenv.WithCRDDirs(filepath.Join(up, "jumpstarter.dev_exporteraccesspolicies.yaml")))
}

// ignoreServerFields drops what the API server sets on every object.
var ignoreServerFields = cmpopts.IgnoreFields(metav1.ObjectMeta{}, "UID", "ResourceVersion", "Generation", "CreationTimestamp", "ManagedFields")

func now() metav1.Time { return metav1.NewTime(time.Now().Truncate(time.Second)) }

func condition(typ, reason string) metav1.Condition {
	return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: reason, Message: "m", LastTransitionTime: now(), ObservedGeneration: 1}
}

func TestExporterRoundTripsThroughUpstreamCRD(t *testing.T) {
	ctx := context.Background()
	ns, err := env.CreateNamespace(ctx, "upstream")
	if err != nil {
		t.Fatal(err)
	}
	in := &jumpstarterv1alpha1.Exporter{
		ObjectMeta: metav1.ObjectMeta{Name: "e1", Namespace: ns, Labels: map[string]string{"board": "x86"}},
		Spec:       jumpstarterv1alpha1.ExporterSpec{Enabled: ptr.To(false), Username: ptr.To("user")},
	}
	if err := env.Client.Create(ctx, in); err != nil {
		t.Fatal(err)
	}
	in.Status = jumpstarterv1alpha1.ExporterStatus{
		Conditions: []metav1.Condition{condition(jumpstarterv1alpha1.ExporterConditionOnline, "Seen"), condition(jumpstarterv1alpha1.ExporterConditionRegistered, "Registered")},
		Credential: &corev1.LocalObjectReference{Name: "e1-token"},
		Devices: []jumpstarterv1alpha1.Device{
			{Uuid: "u1", Labels: map[string]string{"jumpstarter.dev/name": "qemu"}},
			{Uuid: "u2", ParentUuid: ptr.To("u1")},
		},
		LeaseRef:            &corev1.LocalObjectReference{Name: "l1"},
		LastSeen:            now(),
		Endpoint:            "grpc.example:443",
		ExporterStatusValue: jumpstarterv1alpha1.ExporterStatusLeaseReady,
		StatusMessage:       "serving",
	}
	want := in.DeepCopy()
	if err := env.Client.Status().Update(ctx, in); err != nil {
		t.Fatal(err)
	}
	var got jumpstarterv1alpha1.Exporter
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(in), &got); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, &got, ignoreServerFields); d != "" {
		t.Errorf("Exporter changed through upstream's CRD (-sent +stored):\n%s", d)
	}

	// Upstream defaults spec.enabled to true; nil means enabled in our reading too.
	bare := &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: "bare", Namespace: ns}}
	if err := env.Client.Create(ctx, bare); err != nil {
		t.Fatal(err)
	}
	if bare.Spec.Enabled == nil || !*bare.Spec.Enabled || !bare.IsEnabled() {
		t.Errorf("spec.enabled default = %v, want true", bare.Spec.Enabled)
	}
}

// The controller only reads ExporterAccessPolicies; every field it reads survives upstream's
// schema under the names the type gives it.
func TestExporterAccessPolicyRoundTripsThroughUpstreamCRD(t *testing.T) {
	ctx := context.Background()
	ns, err := env.CreateNamespace(ctx, "upstream")
	if err != nil {
		t.Fatal(err)
	}
	in := &jumpstarterv1alpha1.ExporterAccessPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "boards-first", Namespace: ns},
		Spec: jumpstarterv1alpha1.ExporterAccessPolicySpec{
			ExporterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"lab/kind": "physical"},
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "arch", Operator: metav1.LabelSelectorOpExists}}},
			Policies: []jumpstarterv1alpha1.Policy{
				{Priority: 20, From: []jumpstarterv1alpha1.From{{ClientSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}}}},
				{Priority: 5, SpotAccess: true, MaximumDuration: &metav1.Duration{Duration: 2 * time.Hour}, From: []jumpstarterv1alpha1.From{{}}},
			},
		},
	}
	want := in.DeepCopy()
	if err := env.Client.Create(ctx, in); err != nil {
		t.Fatal(err)
	}
	var got jumpstarterv1alpha1.ExporterAccessPolicy
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(in), &got); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, &got, ignoreServerFields, cmpopts.IgnoreFields(metav1.TypeMeta{}, "Kind", "APIVersion")); d != "" {
		t.Errorf("ExporterAccessPolicy changed through upstream's CRD (-sent +stored):\n%s", d)
	}
}

func TestLeaseRoundTripsThroughUpstreamCRD(t *testing.T) {
	ctx := context.Background()
	ns, err := env.CreateNamespace(ctx, "upstream")
	if err != nil {
		t.Fatal(err)
	}
	begin, end := now(), metav1.NewTime(now().Add(time.Hour))
	in := &jumpstarterv1alpha1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: "l1", Namespace: ns},
		Spec: jumpstarterv1alpha1.LeaseSpec{
			ClientRef:     corev1.LocalObjectReference{Name: "client"},
			Duration:      &metav1.Duration{Duration: 30 * time.Minute},
			Selector:      metav1.LabelSelector{MatchLabels: map[string]string{"board": "x86"}, MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "arch", Operator: metav1.LabelSelectorOpIn, Values: []string{"x86_64"}}}},
			ExporterRef:   &corev1.LocalObjectReference{Name: "e1"},
			Release:       true,
			BeginTime:     &begin,
			EndTime:       &end,
			AllowDisabled: true,
			Tags:          map[string]string{"team": "a"},
			Context:       map[string]string{"ci": "job-1"},
		},
	}
	if err := env.Client.Create(ctx, in); err != nil {
		t.Fatal(err)
	}
	in.Status = jumpstarterv1alpha1.LeaseStatus{
		BeginTime:   &begin,
		EndTime:     &end,
		ExporterRef: &corev1.LocalObjectReference{Name: "e1"},
		Ended:       true,
		Priority:    3,
		SpotAccess:  true,
		Conditions:  []metav1.Condition{condition(jumpstarterv1alpha1.LeaseConditionReady, "Released")},
	}
	want := in.DeepCopy()
	if err := env.Client.Status().Update(ctx, in); err != nil {
		t.Fatal(err)
	}
	var got jumpstarterv1alpha1.Lease
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(in), &got); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, &got, ignoreServerFields); d != "" {
		t.Errorf("Lease changed through upstream's CRD (-sent +stored):\n%s", d)
	}

	// status.ended is always serialized: a fresh lease reads back ended=false, not absent.
	fresh := &jumpstarterv1alpha1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l2", Namespace: ns},
		Spec: jumpstarterv1alpha1.LeaseSpec{ClientRef: corev1.LocalObjectReference{Name: "c"}, Selector: metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}}}
	if err := env.Client.Create(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	fresh.Status.Conditions = []metav1.Condition{condition(jumpstarterv1alpha1.LeaseConditionPending, "NotAvailable")}
	if err := env.Client.Status().Update(ctx, fresh); err != nil {
		t.Fatalf("status with ended=false rejected by upstream's required ended: %v", err)
	}
}
