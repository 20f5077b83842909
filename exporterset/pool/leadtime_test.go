package pool_test

import (
	"testing"
	"time"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/pool"
	corev1 "k8s.io/api/core/v1"
)

func TestMeasureStartup(t *testing.T) {
	now := fixture.Epoch.Add(20 * time.Second)
	cases := []struct {
		name    string
		in      *pool.Instance
		binding vtv1alpha1.BindingMode
		want    time.Duration
		ok      bool
	}{
		{"Immediate: create to online", fixture.BootedAt("a", time.Second, 5*time.Second), vtv1alpha1.BindingImmediate, 5 * time.Second, true},
		{"WaitForFirstConsumer: Pod start to online", fixture.BootedAt("a", 10*time.Second, 14*time.Second), vtv1alpha1.BindingWaitForFirstConsumer, 4 * time.Second, true},
		{"not online yet", fixture.Instance("a", fixture.Pod(corev1.PodRunning)), vtv1alpha1.BindingImmediate, 0, false},
		{"online before its Pod: a restarted Pod", fixture.BootedAt("a", 10*time.Second, 5*time.Second), vtv1alpha1.BindingImmediate, 0, false},
		{"online too long ago to tell", fixture.BootedAt("a", 0, 5*time.Second), vtv1alpha1.BindingImmediate, 0, false},
	}
	for _, c := range cases {
		n := now
		if c.name == "online too long ago to tell" {
			n = fixture.Epoch.Add(5*time.Second + pool.StartupFresh + time.Second)
		}
		_, got, ok := pool.MeasureStartup(c.in, c.binding, n)
		if ok != c.ok || got != c.want {
			t.Errorf("%s: %s %v, want %s %v", c.name, got, ok, c.want, c.ok)
		}
	}
}

func TestStartupLogLeadTime(t *testing.T) {
	var log pool.StartupLog
	if _, ok := log.LeadTime(); ok {
		t.Fatal("a lead time before anything was measured")
	}
	now := fixture.Epoch.Add(30 * time.Second)
	instances := []*pool.Instance{fixture.BootedAt("a", 0, 4*time.Second)}
	log = log.Record(instances, vtv1alpha1.BindingImmediate, now)
	if got, _ := log.LeadTime(); got != 4*time.Second+pool.LeadMarginMin {
		t.Fatalf("lead after one 4 s start-up: %s, want 4 s + %s", got, pool.LeadMarginMin)
	}
	// The same instance seen again, even after going offline and back, counts once.
	log = log.Record(instances, vtv1alpha1.BindingImmediate, now)
	instances[0].Exporter.Status.Conditions = nil
	log = log.Record(instances, vtv1alpha1.BindingImmediate, now)
	instances[0] = fixture.BootedAt("a", 0, 20*time.Second)
	log = log.Record(instances, vtv1alpha1.BindingImmediate, now)
	if len(log.Samples()) != 1 {
		t.Fatalf("samples %v, want the one start-up", log.Samples())
	}
	// The 90th percentile with a quarter as margin: one slow outlier in 20 does not count.
	for i := range pool.StartupSamples + 5 {
		d := 8 * time.Second
		if i == pool.StartupSamples+4 {
			d = time.Minute
		}
		log = log.Record([]*pool.Instance{fixture.BootedAt(string(rune('b'+i)), 0, d)}, vtv1alpha1.BindingImmediate, now)
	}
	if len(log.Samples()) != pool.StartupSamples {
		t.Fatalf("%d samples kept, want the last %d", len(log.Samples()), pool.StartupSamples)
	}
	if got, _ := log.LeadTime(); got != 10*time.Second {
		t.Fatalf("lead %s, want 8 s + 2 s", got)
	}
}
