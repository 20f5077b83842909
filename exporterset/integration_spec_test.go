package exporterset_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
)

func degraded(st vtv1alpha1.ExporterSetStatus) (reason vtv1alpha1.ConditionReason, message string) {
	if c := apimeta.FindStatusCondition(st.Conditions, vtv1alpha1.ConditionDegraded); c != nil && c.Status == "True" {
		return vtv1alpha1.ConditionReason(c.Reason), c.Message
	}
	return "", ""
}

func TestClassMissingThenCreated(t *testing.T) {
	w := newWorld(t)
	w.controller(env.Config)
	w.set("pool", 2, 4, 0)
	st := w.waitStatus("pool", 20*time.Second, "ClassNotFound", func(s vtv1alpha1.ExporterSetStatus) bool {
		r, _ := degraded(s)
		return r == vtv1alpha1.ReasonClassNotFound
	})
	if st.Replicas != 0 || len(w.exporters("pool")) != 0 {
		t.Fatalf("instances created without a class: %s", summary(st))
	}
	w.class("fake")
	w.waitStatus("pool", 30*time.Second, "2 ready once the class exists", func(s vtv1alpha1.ExporterSetStatus) bool {
		r, _ := degraded(s)
		return s.ReadyReplicas == 2 && r == ""
	})
}

func TestBadParametersSetConditionAndDeleteNothing(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	set := w.set("pool", 2, 4, 2)
	w.waitStatus("pool", 30*time.Second, "2 ready", func(s vtv1alpha1.ExporterSetStatus) bool { return s.ReadyReplicas == 2 })
	before := w.exporters("pool")

	w.edit(set, func() {
		set.Spec.Parameters = &apiextensionsv1.JSON{Raw: []byte(`{"invalid":"no good"}`)}
		set.Spec.MinReplicas, set.Spec.MinAvailableReplicas = 0, 0 // would scale down if not blocked
	})
	st := w.waitStatus("pool", 20*time.Second, "InvalidParameters", func(s vtv1alpha1.ExporterSetStatus) bool {
		r, _ := degraded(s)
		return r == vtv1alpha1.ReasonInvalidParameters
	})
	if _, msg := degraded(st); !strings.Contains(msg, "parameters.invalid") {
		t.Errorf("message lacks the field path: %q", msg)
	}
	time.Sleep(3 * time.Second) // longer than the cooldown: a scale-down would have happened
	after := w.exporters("pool")
	if len(after) != len(before) {
		t.Fatalf("instances changed while parameters were invalid: %d -> %d", len(before), len(after))
	}
	for _, e := range after {
		if !e.IsEnabled() {
			t.Errorf("%s disabled while parameters were invalid", e.Name)
		}
	}
}

func TestUnservedProvisionerLeftAlone(t *testing.T) {
	w := newWorld(t)
	w.class("other", func(c *vtv1alpha1.VirtualTargetClass) { c.Spec.Provisioner = "renode.example.dev" })
	w.class("fake")
	w.controller(env.Config)
	w.set("other", 1, 4, 0, func(s *vtv1alpha1.ExporterSet) { s.Spec.VirtualTargetClassName = "other" })
	w.set("mine", 1, 4, 0) // proves the controller runs
	w.waitStatus("mine", 30*time.Second, "1 ready", func(s vtv1alpha1.ExporterSetStatus) bool { return s.ReadyReplicas == 1 })
	if st := w.getSet("other").Status; len(st.Conditions) != 0 || st.Selector != "" || len(w.exporters("other")) != 0 {
		t.Fatalf("set of an unserved provisioner was touched: %s", summary(st))
	}
}

func TestCABundleMissingIsACondition(t *testing.T) {
	w := newWorld(t)
	w.class("fake", func(c *vtv1alpha1.VirtualTargetClass) {
		c.Spec.CABundleConfigMapRef = &vtv1alpha1.CABundleConfigMapRef{Name: "custom-ca", Key: "bundle.pem"}
	})
	w.controller(env.Config)
	w.set("pool", 1, 4, 0)
	st := w.waitStatus("pool", 20*time.Second, "CABundleMissing", func(s vtv1alpha1.ExporterSetStatus) bool {
		r, _ := degraded(s)
		return r == vtv1alpha1.ReasonCABundleMissing
	})
	if st.PodsRunning+st.PodsPending != 0 {
		t.Fatalf("pods started without a CA bundle: %s", summary(st))
	}
	w.eventually(10*time.Second, "a Waiting event naming the ConfigMap", func() string {
		for _, n := range w.eventNotes("pool", string(exporterset.EventWaiting)) {
			if strings.Contains(n, "custom-ca") {
				return ""
			}
		}
		return fmt.Sprintf("Waiting events: %q", w.eventNotes("pool", string(exporterset.EventWaiting)))
	})
	// A PEM block: the simulated exporter, like the real one, cannot use a CA that is none.
	w.create(configMap("custom-ca", map[string]string{"bundle.pem": "-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n"}))
	w.waitStatus("pool", 30*time.Second, "ready once the CA exists", func(s vtv1alpha1.ExporterSetStatus) bool {
		r, _ := degraded(s)
		return s.ReadyReplicas == 1 && r == ""
	})
}
