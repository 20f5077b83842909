//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
)

// firstInstance times, on watches of one namespace, the steps of a new set's first instance
// on the real path (issue 41): each step's first sighting, from the moment the recording
// began (just before the set was created). The steps inside the controller before its first
// create (its lock, its first pass, its create call) come from its log (controllerSteps).
type firstInstance struct {
	start time.Time
	mu    sync.Mutex
	at    map[string]time.Duration
}

// The steps, in the order an instance goes through them.
const (
	stepGate       = "controller: gate opened"
	stepFirstPass  = "controller: first pass"
	stepCreate     = "controller: Exporter create"
	stepExporter   = "Exporter created"
	stepCredential = "credential issued (core)"
	stepConfig     = "config Secret written"
	stepPod        = "Pod created"
	stepScheduled  = "Pod scheduled"
	stepStarted    = "containers started"
	stepRegistered = "exporter registered (core)"
	stepAvailable  = "set: first instance available"
)

var firstInstanceSteps = []string{stepGate, stepFirstPass, stepCreate, stepExporter, stepCredential, stepConfig, stepPod, stepScheduled, stepStarted, stepRegistered, stepAvailable}

// traceFirstInstance starts the recording for ns; it stops with the test.
func traceFirstInstance(t *testing.T, ns string) *firstInstance {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	f := &firstInstance{start: time.Now(), at: map[string]time.Duration{}}
	for _, list := range []client.ObjectList{&vtv1alpha1.ExporterSetList{}, &jsv1.ExporterList{}, &corev1.SecretList{}, &corev1.PodList{}} {
		w, err := wc.Watch(rctx, list, client.InNamespace(ns))
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer w.Stop()
			for ev := range w.ResultChan() {
				if ev.Type == watch.Added || ev.Type == watch.Modified {
					f.observe(ev.Object)
				}
			}
		}()
	}
	return f
}

func (f *firstInstance) observe(o any) {
	var steps []string
	switch o := o.(type) {
	case *vtv1alpha1.ExporterSet:
		if o.Status.AvailableReplicas > 0 {
			steps = append(steps, stepAvailable)
		}
	case *jsv1.Exporter:
		if metav1.GetControllerOf(o) == nil {
			return
		}
		steps = append(steps, stepExporter)
		if o.Status.Credential != nil {
			steps = append(steps, stepCredential)
		}
		if apimeta.IsStatusConditionTrue(o.Status.Conditions, jsv1.ExporterConditionRegistered) {
			steps = append(steps, stepRegistered)
		}
	case *corev1.Secret:
		if r := metav1.GetControllerOf(o); r != nil && r.Kind == "Exporter" {
			steps = append(steps, stepConfig)
		}
	case *corev1.Pod:
		if r := metav1.GetControllerOf(o); r == nil || r.Kind != "Exporter" {
			return
		}
		steps = append(steps, stepPod)
		if o.Spec.NodeName != "" {
			steps = append(steps, stepScheduled)
		}
		if allStarted(o) {
			steps = append(steps, stepStarted)
		}
	}
	now := time.Since(f.start)
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, s := range steps {
		if _, seen := f.at[s]; !seen {
			f.at[s] = now
		}
	}
}

// allStarted says whether every container of the Pod (native sidecars included) has
// started.
func allStarted(p *corev1.Pod) bool {
	n := 0
	for _, cs := range append(append([]corev1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if cs.State.Running == nil && cs.State.Terminated == nil {
			return false
		}
		n++
	}
	return n > 0 && n == len(p.Spec.InitContainers)+len(p.Spec.Containers)
}

// controllerSteps adds the steps the controller logged for ns (exporterset.StepKey) to the
// record, at the time the container runtime stamped on each log line (this host's clock, as
// the watches'). A step logged more than once counts at its first line.
func (f *firstInstance) controllerSteps(ns string) {
	files, _ := filepath.Glob(filepath.Join(nd.PodLogsDir(), controllerNamespace+"_*", "*", "*.log"))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			// A CRI log line: "<RFC3339Nano> <stream> <tag> <message>".
			fields := strings.SplitN(line, " ", 4)
			if len(fields) < 4 || !strings.Contains(fields[3], `"`+ns+`"`) {
				continue
			}
			var msg map[string]any
			if json.Unmarshal([]byte(fields[3]), &msg) != nil {
				continue
			}
			step, _ := msg[exporterset.StepKey].(string)
			at, err := time.Parse(time.RFC3339Nano, fields[0])
			if step == "" || err != nil {
				continue
			}
			f.mu.Lock()
			if prev, seen := f.at["controller: "+step]; !seen || at.Sub(f.start) < prev {
				f.at["controller: "+step] = at.Sub(f.start)
			}
			f.mu.Unlock()
		}
	}
}

// seen reports whether step was recorded.
func (f *firstInstance) seen(step string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, ok := f.at[step]
	return ok
}

// breakdown is one line per step: its time since the set's create and since the step before.
func (f *firstInstance) breakdown() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var lines []string
	prev := time.Duration(0)
	steps := append([]string(nil), firstInstanceSteps...)
	key := func(s string) time.Duration {
		if at, ok := f.at[s]; ok {
			return at
		}
		return time.Duration(1 << 62) // not seen: last
	}
	sort.SliceStable(steps, func(i, j int) bool { return key(steps[i]) < key(steps[j]) })
	for _, s := range steps {
		at, ok := f.at[s]
		if !ok {
			lines = append(lines, fmt.Sprintf("  %-28s not seen", s))
			continue
		}
		lines = append(lines, fmt.Sprintf("  %-28s +%6.2fs (%+.2fs)", s, at.Seconds(), (at-prev).Seconds()))
		prev = at
	}
	return strings.Join(lines, "\n")
}
