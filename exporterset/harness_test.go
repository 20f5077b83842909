package exporterset_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/internal/testing/fakeprov"
	"github.com/exporterset/exporterset/internal/testing/jumpsim"
	"github.com/exporterset/exporterset/internal/testing/testenv"
	"github.com/exporterset/exporterset/internal/tuning"
	"github.com/exporterset/exporterset/provisioner"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	// Errors always, everything with EXPORTERSET_TEST_VERBOSE=1.
	level := zapcore.ErrorLevel
	if os.Getenv("EXPORTERSET_TEST_VERBOSE") != "" {
		level = zapcore.DebugLevel
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.Level(level)))
	testenv.Main(m, &env)
}

// world is one test's namespace with the Jumpstarter simulator running in it.
type world struct {
	t    testing.TB
	ctx  context.Context
	ns   string
	c    client.Client
	sim  *jumpsim.Simulator
	fake *fakeprov.Fake
	// ext, when set, is registered beside fake (fakeprov.ExternalName) by controller.
	ext *fakeprov.External
	rec *exporterset.Reconciler // the last controller's
}

func newWorld(t testing.TB, simOpts ...jumpsim.Option) *world {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ns, err := env.CreateNamespace(ctx, "es")
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, ctx: ctx, ns: ns, c: env.Client, fake: fakeprov.New()}
	w.create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: exporterset.DefaultCAConfigMap, Namespace: ns},
		Data: map[string]string{exporterset.DefaultCAKey: "-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n"}})
	sim, err := jumpsim.New(env.Config, append([]jumpsim.Option{jumpsim.WithNamespaces(ns)}, simOpts...)...)
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Stop() })
	w.sim = sim
	return w
}

// controller runs a manager with the reconciler in w's namespace until the returned stop is
// called (or the test ends).
func (w *world) controller(cfg *rest.Config, opts ...exporterset.Option) (stop func()) {
	w.t.Helper()
	registry := w.fake.Registry()
	if w.ext != nil {
		if err := w.ext.Register(registry); err != nil {
			w.t.Fatal(err)
		}
	}
	return w.controllerServing(cfg, registry, opts...)
}

// controllerServing runs a manager as controller does, serving the provisioners of
// registry: two of them with different registries are two controller processes, each with
// its own cache, queues and memory.
func (w *world) controllerServing(cfg *rest.Config, registry *provisioner.Registry, opts ...exporterset.Option) (stop func()) {
	w.t.Helper()
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 env.Scheme,
		Cache:                  exporterset.CacheOptions(w.ns),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             ctrlConfig(),
	})
	if err != nil {
		w.t.Fatal(err)
	}
	r := exporterset.NewReconciler(mgr.GetClient(), mgr.GetAPIReader(), registry,
		append([]exporterset.Option{exporterset.WithRecorder(mgr.GetEventRecorder("exporterset")), exporterset.WithTuning(tuning.Knobs{RetryInterval: time.Second}), exporterset.WithCapacityBudgets()}, opts...)...)
	if err := r.SetupWithManager(mgr); err != nil {
		w.t.Fatal(err)
	}
	w.rec = r
	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			w.t.Errorf("manager: %v", err)
		}
	}
	w.t.Cleanup(stop)
	return stop
}

func (w *world) create(obj client.Object) {
	w.t.Helper()
	if obj.GetNamespace() == "" {
		obj.SetNamespace(w.ns)
	}
	if err := w.c.Create(w.ctx, obj); err != nil {
		w.t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

func (w *world) class(name string, mutate ...func(*vtv1alpha1.VirtualTargetClass)) *vtv1alpha1.VirtualTargetClass {
	c := &vtv1alpha1.VirtualTargetClass{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns},
		Spec: vtv1alpha1.VirtualTargetClassSpec{Provisioner: fakeprov.Name}}
	for _, m := range mutate {
		m(c)
	}
	w.create(c)
	return c
}

func (w *world) set(name string, minR, maxR, minAvail int32, mutate ...func(*vtv1alpha1.ExporterSet)) *vtv1alpha1.ExporterSet {
	s := &vtv1alpha1.ExporterSet{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns},
		Spec: vtv1alpha1.ExporterSetSpec{
			VirtualTargetClassName: "fake",
			Selector:               metav1.LabelSelector{MatchLabels: map[string]string{"board": name}},
			Template: vtv1alpha1.ExporterTemplate{
				Metadata: vtv1alpha1.ExporterTemplateMetadata{Labels: map[string]string{"board": name}},
				Spec:     vtv1alpha1.ExporterTemplateSpec{Drivers: []vtv1alpha1.DriverSpec{{Name: "power", Type: "jumpstarter_driver_power.driver.MockPower"}}},
			},
			MinReplicas: minR, MaxReplicas: ptr.To(maxR), MinAvailableReplicas: minAvail,
			ScaleDownCooldown: &metav1.Duration{Duration: time.Second},
		}}
	for _, m := range mutate {
		m(s)
	}
	w.create(s)
	return s
}

// edit applies mutate to the latest version of obj, retrying on conflicts.
func (w *world) edit(obj client.Object, mutate func()) {
	w.t.Helper()
	for i := 0; ; i++ {
		if err := w.c.Get(w.ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			w.t.Fatal(err)
		}
		mutate()
		err := w.c.Update(w.ctx, obj)
		if err == nil {
			return
		}
		if i > 10 {
			w.t.Fatalf("updating %s: %v", obj.GetName(), err)
		}
	}
}

func (w *world) getSet(name string) *vtv1alpha1.ExporterSet {
	w.t.Helper()
	var s vtv1alpha1.ExporterSet
	if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &s); err != nil {
		w.t.Fatal(err)
	}
	return &s
}

// exporters lists the Exporters labelled for set.
func (w *world) exporters(set string) []jumpstarterv1alpha1.Exporter {
	w.t.Helper()
	var list jumpstarterv1alpha1.ExporterList
	if err := w.c.List(w.ctx, &list, client.InNamespace(w.ns), client.MatchingLabels{pool.LabelSet: set}); err != nil {
		w.t.Fatal(err)
	}
	return list.Items
}

// eventually polls cond until it returns "" (met) or the timeout passes; the last reason
// is the failure message.
func (w *world) eventually(timeout time.Duration, what string, cond func() string) {
	w.t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for time.Now().Before(deadline) {
		if last = cond(); last == "" {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	w.t.Fatalf("timed out after %v waiting for %s: %s", timeout, what, last)
}

// statusIs waits until the set's status counters satisfy want.
func (w *world) waitStatus(name string, timeout time.Duration, what string, ok func(vtv1alpha1.ExporterSetStatus) bool) vtv1alpha1.ExporterSetStatus {
	w.t.Helper()
	var st vtv1alpha1.ExporterSetStatus
	w.eventually(timeout, what, func() string {
		st = w.getSet(name).Status
		if ok(st) {
			return ""
		}
		return fmt.Sprintf("status %s", summary(st))
	})
	return st
}

func summary(st vtv1alpha1.ExporterSetStatus) string {
	var conds []string
	for _, c := range st.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return fmt.Sprintf("replicas=%d ready=%d available=%d leased=%d unavailable=%d disabled=%d pods(p/r/f/u)=%d/%d/%d/%d [%s]",
		st.Replicas, st.ReadyReplicas, st.AvailableReplicas, st.LeasedReplicas, st.UnavailableReplicas, st.ExportersDisabled,
		st.PodsPending, st.PodsRunning, st.PodsFailed, st.PodsUnknown, strings.Join(conds, " "))
}

// lease creates a Lease selecting board=set, as a Jumpstarter client would.
func (w *world) lease(name, board string) *jumpstarterv1alpha1.Lease {
	l := &jumpstarterv1alpha1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.ns},
		Spec: jumpstarterv1alpha1.LeaseSpec{
			ClientRef: corev1.LocalObjectReference{Name: "test-client"},
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"board": board}},
			Duration:  &metav1.Duration{Duration: time.Hour},
		}}
	w.create(l)
	return l
}

// waitAssigned waits until the lease holds an exporter and returns its name.
func (w *world) waitAssigned(l *jumpstarterv1alpha1.Lease) string {
	w.t.Helper()
	var exporter string
	w.eventually(20*time.Second, "lease "+l.Name+" assigned", func() string {
		if err := w.c.Get(w.ctx, client.ObjectKeyFromObject(l), l); err != nil {
			return err.Error()
		}
		if l.Status.ExporterRef == nil {
			return fmt.Sprintf("conditions %v", l.Status.Conditions)
		}
		exporter = l.Status.ExporterRef.Name
		return ""
	})
	return exporter
}

func (w *world) release(l *jumpstarterv1alpha1.Lease) {
	w.t.Helper()
	w.edit(l, func() { l.Spec.Release = true })
}

func configMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}
}

// jumpsimWithoutAnything runs no simulated component: for tests that drive the reconciler
// by hand and want nothing else to touch the objects.
func jumpsimWithoutAnything() []jumpsim.Option {
	return []jumpsim.Option{jumpsim.WithoutController(), jumpsim.WithoutKubelet(), jumpsim.WithoutGarbageCollector()}
}

func getExporter(t testing.TB, w *world, name string) *jumpstarterv1alpha1.Exporter {
	t.Helper()
	var e jumpstarterv1alpha1.Exporter
	if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: name}, &e); err != nil {
		return nil
	}
	return &e
}

// eventNotes returns the notes of the events with this reason about the set.
func (w *world) eventNotes(set, reason string) []string {
	w.t.Helper()
	var events eventsv1.EventList
	if err := w.c.List(w.ctx, &events, client.InNamespace(w.ns)); err != nil {
		w.t.Fatal(err)
	}
	var notes []string
	for _, e := range events.Items {
		if e.Reason == reason && e.Regarding.Name == set {
			notes = append(notes, e.Note)
		}
	}
	return notes
}

// eventCount counts the occurrences of events with this reason about the set: an event
// recorded again with the same note is one object whose series counts the repeats.
func (w *world) eventCount(set, reason string) int {
	w.t.Helper()
	var events eventsv1.EventList
	if err := w.c.List(w.ctx, &events, client.InNamespace(w.ns)); err != nil {
		w.t.Fatal(err)
	}
	n := 0
	for _, e := range events.Items {
		if e.Reason != reason || e.Regarding.Name != set {
			continue
		}
		if e.Series != nil && e.Series.Count > 1 {
			n += int(e.Series.Count)
		} else {
			n++
		}
	}
	return n
}
