package jumpsim

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

func TestCredentialIssued(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t, WithEndpoint("grpc.test:8082"))
	ctx := testCtx(t)
	ex := createExporter(t, ns, "ex1", nil)

	got, err := sim.WaitExporter(ctx, ns, "ex1", func(e *jsv1.Exporter) bool { return e.Status.Credential != nil })
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Credential.Name != "ex1-token" || got.Status.Endpoint != "grpc.test:8082" {
		t.Fatalf("credential %v endpoint %q", got.Status.Credential, got.Status.Endpoint)
	}
	// Never seen: offline as upstream reports it, not missing conditions.
	if c := meta.FindStatusCondition(got.Status.Conditions, jsv1.ExporterConditionOnline); c == nil || c.Status != metav1.ConditionFalse || c.Message != msgNeverSeen {
		t.Fatalf("Online condition of a new exporter: %+v", c)
	}
	if got.Status.ExporterStatusValue != "" || got.Status.StatusMessage != msgNeverSeen {
		t.Fatalf("exporterStatus %q (%q), want upstream's empty value, never seen", got.Status.ExporterStatusValue, got.Status.StatusMessage)
	}

	sec := getObj(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ex1-token"}})
	if want := Token(ns, "ex1", ex.UID, 0); string(sec.Data[TokenKey]) != want {
		t.Fatalf("token %q, want %q", sec.Data[TokenKey], want)
	}
	if ref := metav1.GetControllerOf(sec); ref == nil || ref.UID != ex.UID || ref.Kind != "Exporter" {
		t.Fatalf("token secret controller %+v", ref)
	}

	tok, err := sim.RotateToken(ctx, ns, "ex1")
	if err != nil {
		t.Fatal(err)
	}
	if tok != Token(ns, "ex1", ex.UID, 1) || tok == string(sec.Data[TokenKey]) {
		t.Fatalf("rotated token %q", tok)
	}
	sec = getObj(t, sec)
	if string(sec.Data[TokenKey]) != tok {
		t.Fatalf("secret holds %q after rotation to %q", sec.Data[TokenKey], tok)
	}
	if sim.Count(ActionCredentialIssued) != 1 || sim.Count(ActionTokenRotated) != 1 {
		t.Fatalf("events: %v", sim.Events())
	}
}

func TestCredentialDelayed(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t, WithCredentialDelay(2*time.Second))
	ctx := testCtx(t)
	createExporter(t, ns, "slow", nil)
	start := time.Now()
	consistently(t, time.Second, func() error {
		ex := getObj(t, &jsv1.Exporter{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "slow"}})
		if ex.Status.Credential != nil {
			return fmt.Errorf("credential issued after %s", time.Since(start))
		}
		return nil
	})
	if _, err := sim.WaitExporter(ctx, ns, "slow", func(e *jsv1.Exporter) bool { return e.Status.Credential != nil }); err != nil {
		t.Fatal(err)
	}
}

func TestCredentialPaused(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t)
	ctx := testCtx(t)
	sim.PauseCredentials()
	createExporter(t, ns, "held", nil)
	consistently(t, 500*time.Millisecond, func() error {
		ex := getObj(t, &jsv1.Exporter{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held"}})
		if ex.Status.Credential != nil {
			return fmt.Errorf("credential issued while paused")
		}
		return nil
	})
	if err := sim.ResumeCredentials(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := sim.WaitExporter(ctx, ns, "held", func(e *jsv1.Exporter) bool { return e.Status.Credential != nil }); err != nil {
		t.Fatal(err)
	}
}

// A token Secret left by an earlier Exporter of the same name is replaced, not reused.
func TestCredentialStaleSecretReplaced(t *testing.T) {
	t.Parallel()
	sim, ns := startSim(t, WithoutGarbageCollector())
	ctx := testCtx(t)
	old := createExporter(t, ns, "reborn", nil)
	if _, err := sim.WaitExporter(ctx, ns, "reborn", func(e *jsv1.Exporter) bool { return e.Status.Credential != nil }); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := sim.WaitGone(ctx, old); err != nil {
		t.Fatal(err)
	}
	fresh := createExporter(t, ns, "reborn", nil)
	if _, err := sim.WaitExporter(ctx, ns, "reborn", func(e *jsv1.Exporter) bool { return e.Status.Credential != nil }); err != nil {
		t.Fatal(err)
	}
	var sec corev1.Secret
	if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "reborn-token"}, &sec); err != nil {
		t.Fatal(err)
	}
	if string(sec.Data[TokenKey]) != Token(ns, "reborn", fresh.UID, 0) {
		t.Fatal("token secret still holds the old exporter's token")
	}
}
