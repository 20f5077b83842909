package exporterset_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/exporterset/pool"
)

func condition(st vtv1alpha1.ExporterSetStatus, typ string) *string {
	if c := apimeta.FindStatusCondition(st.Conditions, typ); c != nil {
		s := string(c.Status) + "/" + c.Reason
		return &s
	}
	return nil
}

func TestScaleFromZeroToMinReplicas(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	reg := prometheus.NewRegistry()
	w.controller(env.Config, exporterset.WithMetrics(reg))
	w.set("pool", 3, 4, 0)
	st := w.waitStatus("pool", 30*time.Second, "3 ready instances", func(s vtv1alpha1.ExporterSetStatus) bool {
		return s.Replicas == 3 && s.ReadyReplicas == 3 && s.AvailableReplicas == 3 && s.PodsRunning == 3
	})
	if st.Selector != "board=pool" {
		t.Errorf("status.selector = %q", st.Selector)
	}
	// Every instance is a labelled, owned Exporter with a config Secret and a running Pod.
	for _, e := range w.exporters("pool") {
		if e.Labels["board"] != "pool" || e.Labels[pool.LabelSpecHash] == "" {
			t.Errorf("%s labels %v", e.Name, e.Labels)
		}
		var cfg corev1.Secret
		if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: exporterset.ConfigSecretName(e.Name)}, &cfg); err != nil {
			t.Errorf("config secret of %s: %v", e.Name, err)
		}
	}
	if got := condition(st, vtv1alpha1.ConditionAvailable); got == nil || *got != "True/"+string(vtv1alpha1.ReasonWarmBufferMet) {
		t.Errorf("Available = %v", got)
	}

	// Metrics on the registry given, and an event per create.
	w.eventually(10*time.Second, "metrics", func() string {
		got, err := testutil.GatherAndCount(reg, "exporterset_instances_created_total", "exporterset_available_replicas")
		if err != nil {
			return err.Error()
		}
		if got != 2 {
			return fmt.Sprintf("%d series", got)
		}
		families, _ := reg.Gather()
		for _, f := range families {
			if f.GetName() == "exporterset_instances_created_total" && f.GetMetric()[0].GetCounter().GetValue() != 3 {
				return fmt.Sprintf("created_total = %v", f.GetMetric()[0].GetCounter().GetValue())
			}
			if f.GetName() == "exporterset_available_replicas" && f.GetMetric()[0].GetGauge().GetValue() != 3 {
				return fmt.Sprintf("available = %v", f.GetMetric()[0].GetGauge().GetValue())
			}
		}
		return ""
	})
	// Created events are one per pass; together they name each instance once.
	w.eventually(10*time.Second, "Created events naming the 3 instances", func() string {
		exporters := w.exporters("pool")
		named := map[string]int{}
		for _, note := range w.eventNotes("pool", string(exporterset.EventCreated)) {
			for _, x := range exporters {
				if strings.Contains(note, x.Name) {
					named[x.Name]++
				}
			}
		}
		if len(exporters) != 3 || len(named) != 3 {
			return fmt.Sprintf("%d exporters, %d named by Created events (%v)", len(exporters), len(named), named)
		}
		for name, n := range named {
			if n != 1 {
				return fmt.Sprintf("%s named by %d Created events", name, n)
			}
		}
		return ""
	})
}

func TestWarmBufferRefilledAfterEachLease(t *testing.T) {
	for _, strategy := range []vtv1alpha1.RecycleStrategy{vtv1alpha1.RecycleExitAndReplace, vtv1alpha1.RecycleInPlaceReuse} {
		t.Run(string(strategy), func(t *testing.T) {
			w := newWorld(t)
			w.class("fake")
			w.controller(env.Config)
			w.set("pool", 0, 5, 2, func(s *vtv1alpha1.ExporterSet) { s.Spec.RecycleStrategy = strategy })
			w.waitStatus("pool", 30*time.Second, "2 available", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas == 2 })

			for i := 0; i < 3; i++ {
				l := w.lease(fmt.Sprint("lease-", i), "pool")
				w.waitAssigned(l)
				w.waitStatus("pool", 30*time.Second, "buffer refilled while leased", func(s vtv1alpha1.ExporterSetStatus) bool {
					return s.LeasedReplicas == 1 && s.AvailableReplicas == 2
				})
				w.release(l)
				w.waitStatus("pool", 30*time.Second, "buffer after release", func(s vtv1alpha1.ExporterSetStatus) bool {
					return s.LeasedReplicas == 0 && s.AvailableReplicas >= 2
				})
			}
		})
	}
}
