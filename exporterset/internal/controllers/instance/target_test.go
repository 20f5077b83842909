package instance

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/contract"
	"github.com/exporterset/exporterset/exporterset/internal/objects"
	"github.com/exporterset/exporterset/internal/testing/fakeprov"
	"github.com/exporterset/exporterset/provisioner"
)

// A target is created only when the pass asked for it, for an Exporter whose record is
// still the one the pass saw, and that is not being deleted. Every case here must return
// before touching the API server (the Reconciler has no client) or the provisioner.
func TestEnsureTargetCreatesOnlyWhatThePassAskedFor(t *testing.T) {
	ext := fakeprov.NewExternal(fakeprov.New())
	class := &vtv1alpha1.VirtualTargetClass{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	req := &provisioner.Request{Set: &vtv1alpha1.ExporterSet{ObjectMeta: metav1.ObjectMeta{Name: "s"}}}
	deleted := metav1.Now()
	cases := []struct {
		name     string
		prov     provisioner.Provisioner
		target   *provisioner.Request
		it       contract.Intent
		record   string
		deleting bool
	}{
		{name: "not asked", prov: ext, target: req},
		{name: "created since the pass looked", prov: ext, target: req, it: contract.Intent{CreateTarget: true}, record: "2026-12-07T05:00:00.1Z"},
		{name: "recreated since the pass saw it lost", prov: ext, target: req, it: contract.Intent{CreateTarget: true, SeenRecord: "2026-12-07T05:00:00.1Z"}, record: "2026-12-07T05:00:00.2Z"},
		{name: "no credentials", prov: ext, it: contract.Intent{CreateTarget: true}},
		{name: "being deleted", prov: ext, target: req, it: contract.Intent{CreateTarget: true}, deleting: true},
		{name: "a provisioner without targets", prov: fakeprov.New(), target: req, it: contract.Intent{CreateTarget: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "i", UID: "u", Annotations: map[string]string{}}}
			if c.record != "" {
				e.Annotations[objects.AnnotationExternalRecorded] = c.record
			}
			if c.deleting {
				e.DeletionTimestamp = &deleted
			}
			r := &Reconciler{}
			b := &build{now: time.Now(), d: &contract.Intents{Class: class, Prov: c.prov, Target: c.target}}
			invalid, err := r.ensureTarget(context.Background(), b, e, c.it)
			if invalid != nil || err != nil {
				t.Fatalf("invalid %v, err %v", invalid, err)
			}
			if n := len(ext.Remotes()); n != 0 {
				t.Fatalf("%d targets created", n)
			}
		})
	}
}
