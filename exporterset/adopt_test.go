package exporterset_test

import (
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/exporterset/internal/controllers/instance"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// Upstream's layout of a pool, as its controller writes it (jumpstarter-dev/jumpstarter at
// b1f2bb41, controller/internal/exporterset: reconciler.go scaleUp and createExporterPod,
// exporterconfig.go, provisioners/qemu/qemu.go RenderPod):
//   - Exporter: generateName "<set>-", labels and annotations = the template's (none of
//     ours), spec.enabled=true, controller owner reference to the set;
//   - config Secret "exporter-config-<exporter>", label exporterset.jumpstarter.dev/name,
//     key config.yaml, controller owner the Exporter;
//   - Pod named as the Exporter, labels = the template's + exporterset.jumpstarter.dev/name,
//     controller owner the Exporter, restartPolicy Never, container "exporter" mounting the
//     config Secret at /etc/jumpstarter/exporters.
const upstreamConfigPrefix = "exporter-config-"

func (w *world) upstreamExporter(set *vtv1alpha1.ExporterSet) *jumpstarterv1alpha1.Exporter {
	w.t.Helper()
	e := &jumpstarterv1alpha1.Exporter{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: set.Name + "-", Namespace: set.Namespace,
			Labels:      maps.Clone(set.Spec.Template.Metadata.Labels),
			Annotations: maps.Clone(set.Spec.Template.Metadata.Annotations),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: vtv1alpha1.GroupVersion.String(), Kind: "ExporterSet",
				Name: set.Name, UID: set.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
		Spec: jumpstarterv1alpha1.ExporterSpec{Enabled: ptr.To(true)},
	}
	w.create(e)
	return e
}

// upstreamPod writes the config Secret and Pod of e as upstream's controller does, once the
// Jumpstarter controller has issued e's credential.
func (w *world) upstreamPod(set *vtv1alpha1.ExporterSet, e *jumpstarterv1alpha1.Exporter) *corev1.Pod {
	w.t.Helper()
	var token string
	w.eventually(20*time.Second, e.Name+" credentialed", func() string {
		if err := w.c.Get(w.ctx, client.ObjectKeyFromObject(e), e); err != nil {
			return err.Error()
		}
		if e.Status.Credential == nil || e.Status.Endpoint == "" {
			return "no credential yet"
		}
		var cred corev1.Secret
		if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: e.Namespace, Name: e.Status.Credential.Name}, &cred); err != nil {
			return err.Error()
		}
		token = string(cred.Data[exporterset.TokenKey])
		return ""
	})
	var ca corev1.ConfigMap
	if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: exporterset.DefaultCAConfigMap}, &ca); err != nil {
		w.t.Fatal(err)
	}
	cfg, err := instance.RenderConfig(e, token, []byte(ca.Data[exporterset.DefaultCAKey]), set.Spec.RecycleStrategy, set.Spec.Template.Spec.Drivers, nil)
	if err != nil {
		w.t.Fatal(err)
	}
	owner := []metav1.OwnerReference{*metav1.NewControllerRef(e, jumpstarterv1alpha1.GroupVersion.WithKind("Exporter"))}
	w.create(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: upstreamConfigPrefix + e.Name, Labels: map[string]string{exporterset.UpstreamLabelSet: set.Name}, OwnerReferences: owner},
		Data:       map[string][]byte{"config.yaml": cfg},
	})
	labels := maps.Clone(set.Spec.Template.Metadata.Labels)
	labels[exporterset.UpstreamLabelSet] = set.Name
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: e.Name, Labels: labels, OwnerReferences: owner},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name: "exporter", Image: "quay.io/jumpstarter-dev/jumpstarter:latest",
				Command:      []string{"jmp", "run", "--exporter-config", "/etc/jumpstarter/exporters/config.yaml"},
				VolumeMounts: []corev1.VolumeMount{{Name: "exporter-config", MountPath: "/etc/jumpstarter/exporters", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "exporter-config", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: upstreamConfigPrefix + e.Name}}}},
		},
	}
	w.create(pod)
	return pod
}

// watchNamespace records every event of list's kind in w's namespace until the test ends.
func (w *world) watchNamespace(list client.ObjectList, seen func(watch.Event)) {
	w.t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		w.t.Fatal(err)
	}
	wi, err := wc.Watch(w.ctx, list, client.InNamespace(w.ns))
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(wi.Stop)
	go func() {
		for ev := range wi.ResultChan() {
			seen(ev)
		}
	}()
}

// A pool upstream's controller built, serving a lease, with an idle instance and one not yet
// ready: ours counts all three from its first status write, never touches the leased one,
// replaces the others with its own by surge (the warm buffer never empties), builds no second
// pool, and replaces the leased one once its lease is over.
func TestAdoptsUpstreamPool(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	set := w.set("pool", 0, 4, 1)
	set = w.getSet("pool") // defaults (recycleStrategy) as the API server filled them in

	idle, leased := w.upstreamExporter(set), w.upstreamExporter(set)
	w.upstreamExporter(set) // not yet ready: upstream created its Exporter, not yet its Pod
	w.upstreamPod(set, idle)
	w.upstreamPod(set, leased)
	w.eventually(20*time.Second, "two upstream instances registered", func() string {
		n := 0
		for _, e := range []*jumpstarterv1alpha1.Exporter{idle, leased} {
			_ = w.c.Get(w.ctx, client.ObjectKeyFromObject(e), e)
			if apimeta.IsStatusConditionTrue(e.Status.Conditions, jumpstarterv1alpha1.ExporterConditionRegistered) &&
				apimeta.IsStatusConditionTrue(e.Status.Conditions, jumpstarterv1alpha1.ExporterConditionOnline) {
				n++
			}
		}
		if n < 2 {
			return fmt.Sprintf("%d of 2", n)
		}
		return ""
	})
	l := &jumpstarterv1alpha1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: w.ns},
		Spec: jumpstarterv1alpha1.LeaseSpec{
			ClientRef: corev1.LocalObjectReference{Name: "test-client"},
			Selector:  metav1.LabelSelector{MatchLabels: map[string]string{"board": "pool"}},
			Duration:  &metav1.Duration{Duration: time.Hour},
			// Pinned, so the test knows which one: the scheduler's choice is by name.
			ExporterRef: &corev1.LocalObjectReference{Name: leased.Name},
		}}
	w.create(l)
	if got := w.waitAssigned(l); got != leased.Name {
		t.Fatalf("lease went to %s, want %s", got, leased.Name)
	}
	var leasedPod corev1.Pod
	if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: leased.Name}, &leasedPod); err != nil {
		t.Fatal(err)
	}
	var leasedConfig corev1.Secret
	if err := w.c.Get(w.ctx, client.ObjectKey{Namespace: w.ns, Name: upstreamConfigPrefix + leased.Name}, &leasedConfig); err != nil {
		t.Fatal(err)
	}

	// Everything that happens from here on is recorded.
	var mu sync.Mutex
	var statuses []vtv1alpha1.ExporterSetStatus
	var touched []string
	leaseOver := false
	w.watchNamespace(&vtv1alpha1.ExporterSetList{}, func(ev watch.Event) {
		if s, ok := ev.Object.(*vtv1alpha1.ExporterSet); ok && s.Name == "pool" && s.Status.ObservedGeneration > 0 {
			mu.Lock()
			statuses = append(statuses, s.Status)
			mu.Unlock()
		}
	})
	w.watchNamespace(&jumpstarterv1alpha1.ExporterList{}, func(ev watch.Event) {
		e, ok := ev.Object.(*jumpstarterv1alpha1.Exporter)
		if !ok || e.UID != leased.UID {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if leaseOver {
			return
		}
		_, retiring := e.Annotations[pool.AnnotationRetiring]
		if ev.Type == watch.Deleted || e.DeletionTimestamp != nil || !e.IsEnabled() || retiring {
			touched = append(touched, fmt.Sprintf("exporter %s: %s deleting=%v enabled=%v retiring=%v", e.Name, ev.Type, e.DeletionTimestamp != nil, e.IsEnabled(), retiring))
		}
	})
	w.watchNamespace(&corev1.PodList{}, func(ev watch.Event) {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if leaseOver {
			return
		}
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID == leased.UID && (p.UID != leasedPod.UID || ev.Type == watch.Deleted || p.DeletionTimestamp != nil) {
			touched = append(touched, fmt.Sprintf("pod %s (uid %s): %s deleting=%v", p.Name, p.UID, ev.Type, p.DeletionTimestamp != nil))
		}
	})
	w.watchNamespace(&corev1.SecretList{}, func(ev watch.Event) {
		s, ok := ev.Object.(*corev1.Secret)
		if !ok || s.UID != leasedConfig.UID {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if !leaseOver && (ev.Type != watch.Added || s.ResourceVersion != leasedConfig.ResourceVersion) {
			touched = append(touched, fmt.Sprintf("config secret %s: %s rv %s", s.Name, ev.Type, s.ResourceVersion))
		}
	})
	time.Sleep(200 * time.Millisecond) // the watches are established

	w.controller(env.Config)

	w.eventually(20*time.Second, "our first status write", func() string {
		mu.Lock()
		defer mu.Unlock()
		if len(statuses) == 0 {
			return "none yet"
		}
		return ""
	})
	mu.Lock()
	first := statuses[0]
	mu.Unlock()
	if first.Replicas != 3 || first.ReadyReplicas != 2 || first.LeasedReplicas != 1 || first.AvailableReplicas != 1 || first.PodsRunning != 2 {
		t.Fatalf("first status write: %s; want replicas=3 ready=2 leased=1 available=1 podsRunning=2", summary(first))
	}

	ours := func(e *jumpstarterv1alpha1.Exporter) bool { return e.Labels[pool.LabelSet] == "pool" }
	owned := func() []jumpstarterv1alpha1.Exporter {
		var list jumpstarterv1alpha1.ExporterList
		if err := w.c.List(w.ctx, &list, client.InNamespace(w.ns)); err != nil {
			t.Fatal(err)
		}
		var out []jumpstarterv1alpha1.Exporter
		for _, e := range list.Items {
			if ref := metav1.GetControllerOf(&e); ref != nil && ref.UID == set.UID && e.DeletionTimestamp == nil {
				out = append(out, e)
			}
		}
		return out
	}
	podsOf := func(uid types.UID) int {
		var pods corev1.PodList
		if err := w.c.List(w.ctx, &pods, client.InNamespace(w.ns)); err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, p := range pods.Items {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == uid && p.DeletionTimestamp == nil {
				n++
			}
		}
		return n
	}
	// The spec with one lease held: the leased upstream instance and one warm instance of ours.
	w.eventually(60*time.Second, "the idle and booting upstream instances replaced by ours", func() string {
		es := owned()
		var foreign, mine []string
		for i := range es {
			if ours(&es[i]) {
				mine = append(mine, es[i].Name)
			} else {
				foreign = append(foreign, es[i].Name)
			}
		}
		st := w.getSet("pool").Status
		if len(foreign) != 1 || foreign[0] != leased.Name || len(mine) != 1 || st.AvailableReplicas != 1 || st.Replicas != 2 {
			return fmt.Sprintf("upstream's %v, ours %v; %s", foreign, mine, summary(st))
		}
		return ""
	})
	for _, e := range owned() {
		if n := podsOf(e.UID); n != 1 {
			t.Errorf("instance %s has %d pods", e.Name, n)
		}
	}

	// Its lease ends: the exporter exits, and ours replaces it too.
	mu.Lock()
	leaseOver = true
	mu.Unlock()
	w.release(l)
	w.eventually(60*time.Second, "the leased upstream instance replaced once its lease ended", func() string {
		es := owned()
		st := w.getSet("pool").Status
		for i := range es {
			if !ours(&es[i]) {
				return fmt.Sprintf("%s still there; %s", es[i].Name, summary(st))
			}
		}
		if len(es) != 1 || st.AvailableReplicas != 1 || st.Replicas != 1 {
			return fmt.Sprintf("%d instances; %s", len(es), summary(st))
		}
		return ""
	})

	mu.Lock()
	defer mu.Unlock()
	for _, s := range touched {
		t.Errorf("the leased instance was touched while leased: %s", s)
	}
	for i, s := range statuses {
		if s.AvailableReplicas < 1 {
			t.Errorf("status write %d: the warm buffer emptied: %s", i, summary(s))
		}
		if s.Replicas > 4 {
			t.Errorf("status write %d: more instances than maxReplicas: %s", i, summary(s))
		}
	}
	t.Logf("%d status writes; first %s", len(statuses), summary(first))
}
