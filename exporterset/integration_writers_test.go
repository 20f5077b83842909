package exporterset_test

import (
	"fmt"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// One writer per object: through a scale-up, InPlaceReuse Pod restarts, leases and a
// template roll, every write of ours to an instance's config Secret or Pod is the instance
// reconciler's, and every write of ours to an Exporter is the set reconciler's. The API
// server's managedFields name the field manager of each write (each reconciler writes as its
// own), so this is judged by the API server, not by the reconciler's own account.
func TestOneWriterPerObject(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	set := w.set("pool", 0, 6, 3, func(s *vtv1alpha1.ExporterSet) { s.Spec.RecycleStrategy = vtv1alpha1.RecycleInPlaceReuse })
	w.waitStatus("pool", 30*time.Second, "3 available", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas == 3 })

	name := w.exporters("pool")[0].Name
	if err := w.sim.FailPod(w.ctx, w.ns, name); err != nil {
		t.Fatal(err)
	}
	l := w.lease("l1", "pool")
	w.waitAssigned(l)
	w.release(l)
	w.edit(set, func() { set.Spec.Template.Metadata.Annotations = map[string]string{"rev": "2"} })
	w.eventually(30*time.Second, "rolled and refilled", func() string {
		rolled := 0
		for _, e := range w.exporters("pool") {
			if e.Annotations["rev"] == "2" && e.IsEnabled() {
				rolled++
			}
		}
		if rolled < 3 {
			return fmt.Sprintf("%d instances on the new spec", rolled)
		}
		return ""
	})

	const set_, inst = "exporterset", "exporterset" + exporterset.InstanceManagerSuffix
	var pods corev1.PodList
	var secrets corev1.SecretList
	for _, l := range []client.ObjectList{&pods, &secrets} {
		if err := w.c.List(w.ctx, l, client.InNamespace(w.ns), client.MatchingLabels{pool.LabelSet: "pool"}); err != nil {
			t.Fatal(err)
		}
	}
	checked := 0
	for i := range pods.Items {
		checked += checkWriters(t, &pods.Items[i], inst, set_)
	}
	for i := range secrets.Items {
		checked += checkWriters(t, &secrets.Items[i], inst, set_) // config Secrets and the labelled credentials
	}
	for _, e := range w.exporters("pool") {
		checked += checkWriters(t, &e, set_, inst)
	}
	if len(pods.Items) < 3 || len(secrets.Items) < 6 || checked == 0 {
		t.Fatalf("too little to judge: %d pods, %d secrets, %d writes of ours", len(pods.Items), len(secrets.Items), checked)
	}
}

// checkWriters fails the test when not, our other field manager, wrote o, and returns how
// many of o's managedFields entries are ours (want's or not's). Others (the Jumpstarter
// simulator, the kubelet's stand-in, the test's own client) write as the test binary.
func checkWriters(t *testing.T, o metav1.Object, want, not string) (ours int) {
	t.Helper()
	var managers []string
	for _, f := range o.GetManagedFields() {
		managers = append(managers, f.Manager)
		if f.Manager != want && f.Manager != not {
			continue
		}
		ours++
		if f.Manager == not {
			t.Errorf("%T %s written by %q (%s), want only %q of ours", o, o.GetName(), f.Manager, f.Operation, want)
		}
	}
	sort.Strings(managers)
	t.Logf("%s: %v", o.GetName(), managers)
	return ours
}

// The instance reconciler does not reconcile on the creates of the Pods and Secrets it owns
// (predicates.go), so what brings an instance back must be their deletes and updates: a
// config Secret deleted or edited by hand is written again, and a Pod deleted is started
// again, each by the instance reconciler.
func TestInstanceRebuildsWhatIsDeletedOrEdited(t *testing.T) {
	w := newWorld(t)
	w.class("fake")
	w.controller(env.Config)
	w.set("pool", 1, 1, 1)
	w.waitStatus("pool", 30*time.Second, "1 available", func(s vtv1alpha1.ExporterSetStatus) bool { return s.AvailableReplicas == 1 })
	name := w.exporters("pool")[0].Name
	key := client.ObjectKey{Namespace: w.ns, Name: exporterset.ConfigSecretName(name)}

	var s corev1.Secret
	if err := w.c.Get(w.ctx, key, &s); err != nil {
		t.Fatal(err)
	}
	want := s.Data
	s.Data = map[string][]byte{"config.yaml": []byte("edited by hand\n")}
	if err := w.c.Update(w.ctx, &s); err != nil {
		t.Fatal(err)
	}
	// rewritten waits until the config Secret exists and stale says nothing of it.
	rewritten := func(what string, stale func(corev1.Secret) string) {
		w.eventually(20*time.Second, what, func() string {
			var got corev1.Secret
			if err := w.c.Get(w.ctx, key, &got); err != nil {
				return err.Error()
			}
			return stale(got)
		})
	}
	rewritten("the edited config Secret written again", func(got corev1.Secret) string {
		if fmt.Sprint(got.Data) != fmt.Sprint(want) {
			return "the config Secret still holds the hand edit"
		}
		return ""
	})

	if err := w.c.Get(w.ctx, key, &s); err != nil {
		t.Fatal(err)
	}
	if err := w.c.Delete(w.ctx, &s); err != nil {
		t.Fatal(err)
	}
	rewritten("the deleted config Secret written again", func(got corev1.Secret) string {
		if got.UID == s.UID {
			return "still the old Secret"
		}
		return ""
	})

	var pods corev1.PodList
	if err := w.c.List(w.ctx, &pods, client.InNamespace(w.ns), client.MatchingLabels{pool.LabelSet: "pool"}); err != nil {
		t.Fatal(err)
	}
	if len(pods.Items) != 1 {
		t.Fatalf("%d pods, want 1", len(pods.Items))
	}
	old := pods.Items[0]
	if err := w.c.Delete(w.ctx, &old, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	w.eventually(20*time.Second, "the deleted Pod started again", func() string {
		var now corev1.PodList
		if err := w.c.List(w.ctx, &now, client.InNamespace(w.ns), client.MatchingLabels{pool.LabelSet: "pool"}); err != nil {
			return err.Error()
		}
		for _, p := range now.Items {
			if p.UID != old.UID && p.DeletionTimestamp == nil {
				return ""
			}
		}
		return fmt.Sprintf("%d pods, none new", len(now.Items))
	})
}
