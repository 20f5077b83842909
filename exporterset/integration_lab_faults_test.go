package exporterset_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/provisioner"
	"github.com/exporterset/exporterset/provisioners/baremetal"
)

// Failures of real lab hosts under the controller (see integration_lab_test.go for the
// lab world and the registration bridge, the one simulated part).

// A lab host cut off the network (its link down: packets dropped, as for a host powered off):
// its instances are reported Failed/HostUnreachable naming it and replaced on the other host.
// Their Exporters stay, being deleted, until their clean-up reaches the host; once it is back
// the clean-up completes and no instance directory is left behind.
func TestLabHostUnreachable(t *testing.T) {
	lw := newLabWorld(t, 2, 2)
	lw.hostFault(baremetal.ReasonHostUnreachable, lw.lab.Cut, lw.lab.Restore)
}

// A class whose known_hosts holds a wrong key for one host (the host reinstalled, or the
// Secret edited wrongly): that host's instances are reported Failed/HostKeyMismatch naming
// it and replaced on the other host, where placement goes (it skips the refusing host); the
// right key back, their clean-up completes.
func TestLabWrongHostKey(t *testing.T) {
	lw := newLabWorld(t, 2, 2)
	setKnownHosts := func(doc []byte) {
		var s corev1.Secret
		s.Name, s.Namespace = labSecret, lw.ns
		lw.edit(&s, func() { s.Data[baremetal.SecretKeyKnownHosts] = doc })
	}
	lw.hostFault(baremetal.ReasonHostKeyMismatch,
		func(_ testing.TB, i int) { setKnownHosts(lw.lab.KnownHostsWrongFor(i)) },
		func(testing.TB, int) { setKnownHosts(lw.lab.KnownHosts()) })
}

// hostFault runs a set "f" of 2 warm exporters (ceiling 4, so that the Exporters held by
// their clean-up leave room for replacements) over two hosts of 2 slots, breaks the host of
// one of them with breakHost, and checks the report (problem, naming the host), the
// replacement on the other host (timed), and the clean-up once fixHost repaired the host.
func (lw *labWorld) hostFault(problem string, breakHost, fixHost func(testing.TB, int)) {
	t := lw.t
	lw.startController()
	lw.labSet("f", 0, 4, 2)
	lw.waitHealthy("f", 2, 180*time.Second)
	before := lw.hostOf("f")
	names := make([]string, 0, len(before))
	for n := range before {
		names = append(names, n)
	}
	slices.Sort(names)
	victimHost := before[names[0]]
	vi := 0
	if victimHost == lw.lab.Hosts[1].Name {
		vi = 1
	}
	other := lw.lab.Hosts[1-vi].Name
	var victims []string
	for n, h := range before {
		if h == victimHost {
			victims = append(victims, n)
		}
	}
	t.Logf("lab: placement %v; breaking %s (%s), which runs %v", before, victimHost, problem, victims)

	breakHost(t, vi)
	broken := time.Now()
	quoted := fmt.Sprintf("lab host %q", victimHost)
	var reportedAfter time.Duration
	lw.eventually(120*time.Second, "the broken host's instances reported", func() string {
		st := lw.getSet("f").Status
		reason, msg := degraded(st)
		if reason == vtv1alpha1.ReasonExternalTargetFailed && strings.Contains(msg, quoted) && strings.Contains(msg, problem) {
			t.Logf("lab: Degraded %s: %s", reason, msg)
			reportedAfter = time.Since(broken)
			return ""
		}
		for _, note := range lw.eventNotes("f", string(vtv1alpha1.ReasonExternalTargetFailed)) {
			if strings.Contains(note, quoted) && strings.Contains(note, problem) {
				t.Logf("lab: event ExternalTargetFailed: %s (Degraded now: %q %q)", note, reason, msg)
				reportedAfter = time.Since(broken)
				return ""
			}
		}
		return "status " + summary(st)
	})
	t.Logf("lab: %s broken → reported %.1f s", victimHost, reportedAfter.Seconds())

	lw.eventually(120*time.Second, "replacements on "+other, func() string {
		now := lw.hostOf("f")
		on := 0
		for n, h := range now {
			if h == other && !slices.Contains(victims, n) {
				on++
			}
		}
		if st := lw.getSet("f").Status; on < 2 || st.AvailableReplicas < 2 {
			return fmt.Sprintf("%d instances on %s (%v); status %s", on, other, now, summary(st))
		}
		return ""
	})
	t.Logf("lab: %s broken → 2 available again on %s %.1f s", victimHost, other, time.Since(broken).Seconds())
	for _, n := range victims {
		// Its removal waits for the host; it is marked retiring meanwhile, so the host
		// coming back does not make it a working instance again.
		lw.eventually(60*time.Second, n+" marked retiring while its host is broken", func() string {
			e := getExporter(t, lw.world, n)
			if e == nil {
				return ""
			}
			if e.Annotations[pool.AnnotationRetiring] == "" || e.Spec.Enabled == nil || *e.Spec.Enabled {
				return fmt.Sprintf("annotations %v, enabled %v", e.Annotations, e.Spec.Enabled)
			}
			t.Logf("lab: replaced %s still there, retiring (finalizers %v): its clean-up waits for %s", n, e.Finalizers, victimHost)
			return ""
		})
	}
	if d := lw.lab.InstanceDirs(vi); len(d) == 0 {
		t.Errorf("%s shows no instance directory while broken: the clean-up cannot have reached it", victimHost)
	}
	replacements := lw.hostOf("f")

	fixHost(t, vi)
	fixed := time.Now()
	lw.eventually(120*time.Second, "the replaced instances cleaned up once "+victimHost+" is back", func() string {
		for _, n := range victims {
			if e := getExporter(t, lw.world, n); e != nil {
				return fmt.Sprintf("%s is still there (annotations %v)", n, e.Annotations)
			}
		}
		return ""
	})
	t.Logf("lab: %s repaired → replaced instances cleaned up %.1f s after the repair", victimHost, time.Since(fixed).Seconds())
	// The replacements serve on: the repair retired none of them.
	for n := range replacements {
		if slices.Contains(victims, n) {
			continue
		}
		if e := getExporter(t, lw.world, n); e == nil || e.Annotations[pool.AnnotationRetiring] != "" {
			t.Errorf("replacement %s retired or removed after the repair (%v)", n, e)
		}
	}
	lw.waitHealthy("f", 2, 60*time.Second)
	lw.noPods()
	lw.checkSlots()
}

// crashOnCreate is the controller's provisioner with the controller dying in its first
// CreateExternal: the unit is made on its host, then the call waits for the manager to stop
// and fails, so the Exporter never records the host. Other calls pass through.
type crashOnCreate struct {
	*baremetal.Provisioner
	once    *sync.Once
	created chan<- string
}

// CreateExternal is the crash, the first time.
func (c *crashOnCreate) CreateExternal(ctx context.Context, req *provisioner.Request) (map[string]string, error) {
	first := false
	c.once.Do(func() { first = true })
	if !first {
		return c.Provisioner.CreateExternal(ctx, req)
	}
	ann, err := c.Provisioner.CreateExternal(context.WithoutCancel(ctx), req)
	c.created <- fmt.Sprintf("%s on %v (%v)", req.Exporter.Name, ann, err)
	select {
	case <-ctx.Done():
	case <-time.After(30 * time.Second):
	}
	return nil, fmt.Errorf("the controller stopped before recording %v", ann)
}

// The controller stopped while creating a unit, and started again (a fresh process, a fresh
// provisioner): the unit made but never recorded is adopted or removed, and once the set
// converges no instance directory is left that no Exporter records.
func TestLabControllerStoppedMidCreate(t *testing.T) {
	lw := newLabWorld(t, 2, 2)
	created := make(chan string, 1)
	lw.wrap = func(p *baremetal.Provisioner) provisioner.Provisioner {
		return &crashOnCreate{Provisioner: p, once: &sync.Once{}, created: created}
	}
	stop := lw.startController()
	lw.labSet("e", 0, 3, 3)
	select {
	case what := <-created:
		t.Logf("lab: first unit made, controller stopping: %s", what)
	case <-time.After(120 * time.Second):
		t.Fatalf("no CreateExternal within 120 s: status %s", summary(lw.getSet("e").Status))
	}
	stop()
	t.Logf("lab: controller stopped; directories no Exporter records: %v", lw.orphans())

	lw.wrap = nil
	restarted := time.Now()
	lw.startController()
	lw.waitHealthy("e", 3, 180*time.Second)
	t.Logf("lab: restarted → all 3 available %.1f s", time.Since(restarted).Seconds())
	lw.eventually(60*time.Second, "no orphan instance directory", func() string {
		if o := lw.orphans(); len(o) > 0 {
			return fmt.Sprintf("instance directories no Exporter records: %v", o)
		}
		return ""
	})
	if d := len(lw.lab.InstanceDirs(0)) + len(lw.lab.InstanceDirs(1)); d != 3 {
		t.Errorf("%d instance directories on the hosts, want the 3 of the set", d)
	}
	lw.noPods()
	lw.checkSlots()
}

// A class whose known_hosts has a wrong key for lab1 from the start: placement skips lab1,
// so every unit runs on lab2, and a third instance, for which lab2 has no slot, is not made.
// What the set says of lab1 then is logged: a placement failure is a transient error, which
// the set does not report as a condition (only an invalid one is).
func TestLabWrongHostKeyFromStart(t *testing.T) {
	lw := newLabWorld(t, 2, 2)
	var s corev1.Secret
	s.Name, s.Namespace = labSecret, lw.ns
	lw.edit(&s, func() { s.Data[baremetal.SecretKeyKnownHosts] = lw.lab.KnownHostsWrongFor(0) })
	lw.startController()
	lw.labSet("w", 0, 3, 3)
	lw.waitStatus("w", 180*time.Second, "2 available", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas >= 2 })
	time.Sleep(15 * time.Second) // passes enough for the third instance's create to be retried
	hosts := lw.hostOf("w")
	t.Logf("lab: placement %v; status %s", hosts, summary(lw.getSet("w").Status))
	for n, h := range hosts {
		if h != "lab2" {
			t.Errorf("%s placed on %s, whose host key does not verify", n, h)
		}
	}
	if d := lw.lab.InstanceDirs(0); len(d) > 0 {
		t.Errorf("instance directories on lab1, whose host key does not verify: %v", d)
	}
	// The third instance waits for a slot: the set says why, naming the host it skipped.
	st := lw.waitStatus("w", 60*time.Second, "the wait quoted", func(s vtv1alpha1.ExporterSetStatus) bool {
		a := availableCond(s)
		return a != nil && strings.Contains(a.Message, "not created yet") && strings.Contains(a.Message, `"lab1"`)
	})
	t.Logf("lab: Available: %s", availableCond(st).Message)
	lw.noPods()
	lw.checkSlots()
}
