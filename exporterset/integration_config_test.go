package exporterset_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/internal/exportercfg"
	"github.com/exporterset/exporterset/internal/tuning"
	"github.com/exporterset/exporterset/provisioner"
)

func exporterConfig(t *testing.T, w *world, exporter string) *exportercfg.Config {
	t.Helper()
	var s corev1.Secret
	if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: exporterset.ConfigSecretName(exporter)}, &s); err != nil {
		return nil
	}
	cfg, err := exportercfg.Parse(s.Data[provisioner.ExporterConfigFile])
	if err != nil {
		t.Fatalf("config of %s is not an ExporterConfig: %v", exporter, err)
	}
	return cfg
}

// The config Secret follows the contract page, is re-synced when the token rotates, and a
// credential Secret that loses its token is a condition, not a crash loop.
func TestExporterConfigSyncAndTokenRotation(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	w.set("pool", 1, 2, 0)
	w.waitStatus("pool", 30*time.Second, "1 ready", func(s vtv1alpha1.ExporterSetStatus) bool { return s.ReadyReplicas == 1 })
	e := w.exporters("pool")[0]

	cfg := exporterConfig(t, w, e.Name)
	if cfg == nil || cfg.Kind != "ExporterConfig" || cfg.APIVersion != "jumpstarter.dev/v1alpha1" ||
		cfg.Metadata.Name != e.Name || cfg.Metadata.Namespace != w.ns || cfg.Endpoint != e.Status.Endpoint ||
		!cfg.ExitOnLeaseEnd || cfg.Token == "" || cfg.TLS.CA == "" {
		t.Fatalf("config does not follow the contract: %+v", cfg)
	}
	if _, ok := cfg.Export["power"]; !ok {
		t.Errorf("template driver missing from export: %v", cfg.Export)
	}
	if _, ok := cfg.Export["fake"]; !ok {
		t.Errorf("provisioner-enriched driver missing from export: %v", cfg.Export)
	}

	token, err := w.sim.RotateToken(w.ctx, w.ns, e.Name)
	if err != nil {
		t.Fatal(err)
	}
	w.eventually(20*time.Second, "the rotated token in the config", func() string {
		if c := exporterConfig(t, w, e.Name); c == nil || c.Token != token {
			return "old token"
		}
		return ""
	})

	var cred corev1.Secret
	if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: e.Status.Credential.Name}, &cred); err != nil {
		t.Fatal(err)
	}
	delete(cred.Data, exporterset.TokenKey)
	if err := w.c.Update(w.ctx, &cred); err != nil {
		t.Fatal(err)
	}
	st := w.waitStatus("pool", 20*time.Second, "CredentialsMissing", func(s vtv1alpha1.ExporterSetStatus) bool {
		r, _ := degraded(s)
		return r == vtv1alpha1.ReasonCredentialsMissing
	})
	if _, msg := degraded(st); !strings.Contains(msg, `no "token" key`) {
		t.Errorf("message %q does not name the missing key", msg)
	}
	if n := len(w.exporters("pool")); n != 1 {
		t.Fatalf("instances changed on a credential problem: %d", n)
	}
}

// InPlaceReuse exporters do not exit after a lease.
func TestInPlaceReuseConfigKeepsExporterRunning(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	w.set("pool", 1, 2, 0, func(s *vtv1alpha1.ExporterSet) { s.Spec.RecycleStrategy = vtv1alpha1.RecycleInPlaceReuse })
	w.waitStatus("pool", 30*time.Second, "1 ready", func(s vtv1alpha1.ExporterSetStatus) bool { return s.ReadyReplicas == 1 })
	if cfg := exporterConfig(t, w, w.exporters("pool")[0].Name); cfg == nil || cfg.ExitOnLeaseEnd {
		t.Fatalf("InPlaceReuse config: %+v", cfg)
	}
}

// A CA that is no PEM bundle makes every exporter exit at start, and the failures build a
// backoff. Fixing the bundle is a fix like fixing the class: the next attempt comes within the
// CA's re-read (30 s), not after the backoff (here 3 minutes).
func TestFixedCAEndsTheBackoff(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the CA's re-read")
	}
	w := newWorld(t)
	var ca corev1.ConfigMap
	if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: exporterset.DefaultCAConfigMap}, &ca); err != nil {
		t.Fatal(err)
	}
	good := ca.Data[exporterset.DefaultCAKey]
	w.edit(&ca, func() { ca.Data[exporterset.DefaultCAKey] = "not a certificate" })
	w.class("fake")
	w.controller(env.Config, exporterset.WithTuning(tuning.Knobs{BackoffBase: 3 * time.Minute, BackoffLimit: 3 * time.Minute}))
	w.set("pool", 0, 2, 1)
	// The failed instance is the set's only enabled Exporter: it stays (Leases wait on it)
	// until the backoff lets its replacement be created.
	w.waitStatus("pool", 30*time.Second, "Degraded, backing off", func(s vtv1alpha1.ExporterSetStatus) bool {
		r, m := degraded(s)
		return (r == vtv1alpha1.ReasonBackingOff || r == vtv1alpha1.ReasonTargetCrashing && strings.Contains(m, "backing off")) && strings.Contains(m, "no PEM certificate")
	})
	w.edit(&ca, func() { ca.Data[exporterset.DefaultCAKey] = good })
	fixed := time.Now()
	w.waitHealthy("pool", 1, 45*time.Second)
	t.Logf("healthy %s after the CA was fixed", time.Since(fixed).Round(time.Millisecond))
}

// A class's parameters.hooks reach every instance's config file, and a bad one is refused
// with a condition and an event naming the field; the fake provisioner never sees them.
func TestHooksInConfigAndRefused(t *testing.T) {
	w := newWorld(t)
	w.class("fake", func(c *vtv1alpha1.VirtualTargetClass) {
		c.Spec.Parameters = &apiextensionsv1.JSON{Raw: []byte(`{"hooks": {"afterLease": {"script": "exit 1", "onFailure": "endLease", "timeout": 10}}}`)}
	})
	w.controller(env.Config)
	set := w.set("pool", 1, 2, 0, func(s *vtv1alpha1.ExporterSet) { s.Spec.RecycleStrategy = vtv1alpha1.RecycleInPlaceReuse })
	w.waitStatus("pool", 30*time.Second, "1 ready", func(s vtv1alpha1.ExporterSetStatus) bool { return s.ReadyReplicas == 1 })
	cfg := exporterConfig(t, w, w.exporters("pool")[0].Name)
	if cfg == nil || cfg.Hooks == nil || cfg.Hooks.BeforeLease != nil || cfg.Hooks.AfterLease == nil {
		t.Fatalf("config hooks: %+v", cfg)
	}
	if a := cfg.Hooks.AfterLease; a.Script != "exit 1" || a.Action() != exportercfg.OnFailureEndLease || a.TimeoutSeconds() != 10 {
		t.Errorf("afterLease hook %+v", a)
	}

	w.edit(set, func() {
		set.Spec.Parameters = &apiextensionsv1.JSON{Raw: []byte(`{"hooks": {"afterLease": {"onFailure": "retry"}}}`)}
	})
	want := `parameters.hooks.afterLease.onFailure is "retry"`
	st := w.waitStatus("pool", 20*time.Second, "InvalidParameters", func(s vtv1alpha1.ExporterSetStatus) bool {
		r, _ := degraded(s)
		return r == vtv1alpha1.ReasonInvalidParameters
	})
	if _, msg := degraded(st); !strings.Contains(msg, want) {
		t.Errorf("condition message %q does not hold %q", msg, want)
	}
	w.eventually(10*time.Second, "an InvalidSpec event naming the field", func() string {
		for _, n := range w.eventNotes("pool", "InvalidSpec") {
			if strings.Contains(n, want) {
				return ""
			}
		}
		return "none yet"
	})
}
