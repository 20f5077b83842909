package main

import (
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/jumpsim"
	"github.com/exporterset/exporterset/internal/testing/testproc"
)

// promSample is one line of the text exposition format.
type promSample struct {
	name   string
	labels map[string]string
	value  float64
}

var (
	sampleRE = regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$`)
	pairRE   = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"`)
	typeRE   = regexp.MustCompile(`^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (\w+)$`)
	bucketRE = regexp.MustCompile(`(exporterset_[a-z_]+)_bucket\{[^}]*le="([^"]+)"`)
	docRowRE = regexp.MustCompile("^\\| `(exporterset_[a-z_]+)` \\| (gauge|counter|histogram) \\| ([^|]*) \\|")
)

// scrape reads /metrics: the samples and each family's type.
func scrape(t *testing.T, url string) ([]promSample, map[string]string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %v %s", url, err, resp.Status)
	}
	var out []promSample
	types := map[string]string{}
	for _, line := range strings.Split(string(body), "\n") {
		if m := typeRE.FindStringSubmatch(line); m != nil {
			types[m[1]] = m[2]
			continue
		}
		m := sampleRE.FindStringSubmatch(line)
		if m == nil || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(m[3], 64)
		if err != nil {
			t.Fatalf("bad sample %q: %v", line, err)
		}
		s := promSample{name: m[1], labels: map[string]string{}, value: v}
		for _, p := range pairRE.FindAllStringSubmatch(m[2], -1) {
			s.labels[p[1]] = p[2]
		}
		out = append(out, s)
	}
	return out, types
}

// value is the sum of the samples of name whose labels include want.
func value(samples []promSample, name string, want map[string]string) (v float64, found bool) {
next:
	for _, s := range samples {
		if s.name != name {
			continue
		}
		for k, x := range want {
			if s.labels[k] != x {
				continue next
			}
		}
		v, found = v+s.value, true
	}
	return v, found
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// TestMetricsAfterALeaseCycle runs the binary with the simulated Jumpstarter through a lease
// cycle (one failed Pod, a lease served warm, two at once of which one waits for a cold
// start, a booked lease) and reads its /metrics: every metric of docs/metrics.md is there
// with the documented type and labels, and the warm/cold counts and the lease waits are what
// the test saw.
func TestMetricsAfterALeaseCycle(t *testing.T) {
	ns := samplesIn(t)
	var failed atomic.Bool // the first Pod fails: one instance failure to count
	sim, err := jumpsim.New(env.Config, jumpsim.WithNamespaces(ns), jumpsim.WithPodStartDelay(2*time.Second),
		jumpsim.WithPodFailure(func(*corev1.Pod) bool { return failed.CompareAndSwap(false, true) }))
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Stop() })
	addr := freePort(t)
	p := start(t, "run", "--kubeconfig", kubeconfig(t), "--namespace", ns,
		"--metrics-bind-address", addr, "--health-probe-bind-address", "0")
	defer p.Stop(t, 25*time.Second)
	metricsURL := "http://" + addr + "/metrics"

	testproc.WaitFor(t, 90*time.Second, "warm buffer of 1 after the failed Pod", func() (bool, string) {
		st := poolStatus(t, ns)
		return failed.Load() && st.AvailableReplicas == 1, fmt.Sprintf("failed=%v %+v", failed.Load(), st)
	})

	// waits[name] is each lease's wait as this test saw it: creationTimestamp to the poll
	// that first showed it assigned.
	waits := map[string]time.Duration{}
	lease := func(name string, begin *metav1.Time) *jumpstarterv1alpha1.Lease {
		l := &jumpstarterv1alpha1.Lease{}
		l.Name, l.Namespace = name, ns
		l.Spec.ClientRef.Name = "e2e"
		l.Spec.Selector.MatchLabels = map[string]string{"board": "x86-64-virtual"}
		l.Spec.BeginTime = begin
		if err := env.Client.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
		return l
	}
	awaitAssigned := func(ls ...*jumpstarterv1alpha1.Lease) {
		testproc.WaitFor(t, 60*time.Second, "leases assigned", func() (bool, string) {
			pending := 0
			for _, l := range ls {
				if _, ok := waits[l.Name]; ok {
					continue
				}
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(l), l); err == nil && l.Status.ExporterRef != nil {
					waits[l.Name] = time.Since(l.CreationTimestamp.Time)
				} else {
					pending++
				}
			}
			return pending == 0, fmt.Sprintf("%d pending", pending)
		})
	}
	refilled := func(leased int32) {
		testproc.WaitFor(t, 60*time.Second, "the buffer refilled", func() (bool, string) {
			st := poolStatus(t, ns)
			return st.AvailableReplicas == 1 && st.LeasedReplicas == leased, fmt.Sprintf("%+v", st)
		})
	}

	warm := lease("warm", nil) // the available instance serves it
	awaitAssigned(warm)
	refilled(1)
	a, b := lease("a", nil), lease("b", nil) // one is served warm, the other waits for a start
	awaitAssigned(a, b)
	refilled(3)
	begin := metav1.NewTime(time.Now().Add(4 * time.Second).Truncate(time.Second))
	booked := lease("booked", &begin)
	awaitAssigned(booked)
	seenBooked := time.Now()

	var samples []promSample
	set := map[string]string{"namespace": ns, "exporterset": "x86-64-pool"}
	testproc.WaitFor(t, 10*time.Second, "the controller to count the booked lease", func() (bool, string) {
		samples, _ = scrape(t, metricsURL)
		n, _ := value(samples, "exporterset_booked_lease_delay_seconds_count", set)
		return n == 1, fmt.Sprintf("booked count %v", n)
	})
	samples, types := scrape(t, metricsURL)

	// Every documented metric, with its documented type and labels.
	doc, err := os.ReadFile("../../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(string(doc), "\n") {
		m := docRowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		rows++
		name, typ := m[1], m[2]
		var labels []string
		for _, l := range regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(m[3], -1) {
			labels = append(labels, l[1])
		}
		// A CapacityBudget's series are labelled by the budget, not the set. No budget governs
		// this cycle's set (the sample budget selects no set), so they are judged here only
		// where the process exports them; the budget's own tests count them.
		budgetRow := slices.Contains(labels, "budget")
		if budgetRow && types[name] == "" {
			continue
		}
		if types[name] != typ {
			t.Errorf("%s: /metrics says type %q, docs/metrics.md %q", name, types[name], typ)
			continue
		}
		series := []string{name}
		if typ == "histogram" {
			series = []string{name + "_bucket", name + "_sum", name + "_count"}
		}
		for _, s := range series {
			want := append([]string(nil), labels...)
			if strings.HasSuffix(s, "_bucket") {
				want = append(want, "le")
			}
			sort.Strings(want)
			n := 0
			for _, smp := range samples {
				if smp.name != s {
					continue
				}
				n++
				var have []string
				for k := range smp.labels {
					have = append(have, k)
				}
				sort.Strings(have)
				if fmt.Sprint(have) != fmt.Sprint(want) {
					t.Errorf("%s has labels %v, documented %v", s, have, want)
				}
				switch {
				case budgetRow && smp.labels["namespace"] != ns:
					t.Errorf("%s: a series of another namespace's budget %v", s, smp.labels)
				case !budgetRow && len(labels) > 0 && (smp.labels["namespace"] != ns || smp.labels["exporterset"] != "x86-64-pool"):
					t.Errorf("%s: a series of another set %v", s, smp.labels)
				}
			}
			if n == 0 {
				t.Errorf("%s: no sample in /metrics", s)
			}
		}
	}
	if rows < 10 {
		t.Fatalf("read %d metric rows from docs/metrics.md", rows)
	}

	// The figures: warm (the first lease, one of a and b, the booked one) and cold.
	assigned := func(start string) float64 {
		v, _ := value(samples, "exporterset_lease_assignments_total", map[string]string{"namespace": ns, "exporterset": "x86-64-pool", "start": start})
		return v
	}
	if w, c := assigned("warm"), assigned("cold"); w != 3 || c != 1 {
		t.Errorf("assignments: warm %v, cold %v; want 3 warm (warm, one of a/b, booked) and 1 cold (the other of a/b)", w, c)
	}
	n, _ := value(samples, "exporterset_lease_wait_seconds_count", set)
	sum, _ := value(samples, "exporterset_lease_wait_seconds_sum", set)
	var seen time.Duration
	for _, name := range []string{"warm", "a", "b"} {
		seen += waits[name]
	}
	// Both clocks start at the same creationTimestamp; they differ by when each saw the
	// assignment (the controller's watch, the test's 100 ms polls).
	if n != 3 || math.Abs(sum-seen.Seconds()) > 1.5 {
		t.Errorf("lease wait: %v leases, %.2fs in all; the test saw 3 leases wait %.2fs in all (%v)", n, sum, seen.Seconds(), waits)
	}
	if d, _ := value(samples, "exporterset_booked_lease_delay_seconds_sum", set); d > seenBooked.Sub(begin.Time).Seconds()+0.5 {
		t.Errorf("booked lease delay %.2fs, but the test saw it assigned %.2fs after its beginTime", d, seenBooked.Sub(begin.Time).Seconds())
	}
	if f, _ := value(samples, "exporterset_instance_failures_total", set); f != 1 {
		t.Errorf("instance failures: %v, want 1 (the first Pod failed)", f)
	}
	// A bucket bound the alerts or the dashboard name (le="60") is one the controller exports:
	// a wrong one would select nothing and an alert would never fire.
	for _, file := range []string{"../../charts/exporterset/files/alerts.yaml", "../../charts/exporterset/files/dashboard.json"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(b), `\"`, `"`)
		for _, m := range bucketRE.FindAllStringSubmatch(text, -1) {
			if _, ok := value(samples, m[1]+"_bucket", map[string]string{"le": m[2]}); !ok {
				t.Errorf("%s selects %s_bucket{le=%q}: no such bucket in /metrics", file, m[1], m[2])
			}
		}
	}
	if c, _ := value(samples, "exporterset_status_condition", map[string]string{"namespace": ns, "exporterset": "x86-64-pool", "type": "Available"}); c != 1 {
		t.Errorf("exporterset_status_condition{type=Available} = %v, want 1", c)
	}
}
