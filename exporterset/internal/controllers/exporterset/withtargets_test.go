package exporterset

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/internal/contract"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/internal/testing/fakeprov"
	"github.com/exporterset/exporterset/provisioner"
)

// The pass asks for a target exactly where it saw none: Gone (never created, or lost), not
// unknown (the remote end did not answer), not on its way, and not for a resting standby
// unless it is leased. The record it saw goes with the ask.
func TestWithTargetsAsksWhereNoTargetWasSeen(t *testing.T) {
	gone := &provisioner.ExternalState{Phase: provisioner.ExternalGone, Reason: "NotCreated"}
	pending := &provisioner.ExternalState{Phase: provisioner.ExternalPending}
	cases := []struct {
		name    string
		state   *provisioner.ExternalState
		record  string
		leased  bool
		resting bool
		want    contract.Intent
	}{
		{name: "never created", state: gone, want: contract.Intent{CreateTarget: true}},
		{name: "lost after its record", state: gone, record: "2026-12-07T05:00:00Z", want: contract.Intent{CreateTarget: true, SeenRecord: "2026-12-07T05:00:00Z"}},
		{name: "unknown: the remote end did not answer", state: nil},
		{name: "on its way", state: pending},
		{name: "a resting standby", state: gone, resting: true},
		{name: "a leased standby", state: gone, resting: true, leased: true, want: contract.Intent{CreateTarget: true}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: "i", UID: types.UID("u"), Annotations: map[string]string{}}}
			if c.record != "" {
				e.Annotations[AnnotationExternalRecorded] = c.record
			}
			if c.leased {
				e.Status.LeaseRef = &corev1.LocalObjectReference{Name: "l"}
			}
			in := &pool.Instance{Exporter: e}
			states := externalStates{}
			if c.state != nil {
				states[e.UID] = c.state
			}
			d := &contract.Intents{Instances: map[types.UID]contract.Intent{}}
			req := &provisioner.Request{}
			withTargets(d, req, []*pool.Instance{in}, states, c.resting)
			if d.Target != req {
				t.Errorf("Target not the credentialed request")
			}
			if got := d.Instances[e.UID]; got != c.want {
				t.Errorf("intent %+v, want %+v", got, c.want)
			}
		})
	}
}

// A hosted unit is the instance's Pod: it is started as a Pod is (Intent.Start), once its
// config is rendered, so the pass never asks for it as a target, gone or not.
func TestWithTargetsAsksNothingForHostedUnits(t *testing.T) {
	e := &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: "i", UID: types.UID("u")}}
	in := &pool.Instance{Exporter: e}
	d := &contract.Intents{Prov: fakeprov.NewHosted(), Instances: map[types.UID]contract.Intent{}}
	req := &provisioner.Request{}
	withTargets(d, req, []*pool.Instance{in}, externalStates{e.UID: {Phase: provisioner.ExternalGone}}, false)
	if d.Target != req {
		t.Errorf("Target not the credentialed request: the unit is created with it")
	}
	if got := d.Instances[e.UID]; got != (contract.Intent{}) {
		t.Errorf("intent %+v for a hosted instance, want none", got)
	}
}

// The pass shows each hosted instance's unit as its Pod, on copies of what observe built.
func TestWithUnitsShowsEachUnitAsItsPod(t *testing.T) {
	mk := func(name string, rec string) *pool.Instance {
		e := &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), Annotations: map[string]string{}}}
		if rec != "" {
			e.Annotations[AnnotationExternalRecorded] = rec
		}
		return &pool.Instance{Exporter: e}
	}
	ready, gone, unknown := mk("a", "2026-12-07T10:00:00Z"), mk("b", "2026-12-07T10:00:00Z"), mk("c", "2026-12-07T10:00:00Z")
	obs := &observation{Instances: []*pool.Instance{ready, gone, unknown}}
	got := withUnits(obs, externalStates{
		"a": {Phase: provisioner.ExternalReady},
		"b": {Phase: provisioner.ExternalGone},
	})
	if len(ready.Pods) != 0 {
		t.Fatalf("observe's instance was changed")
	}
	var phases []corev1.PodPhase
	for _, in := range got.Instances {
		if len(in.Pods) == 0 {
			phases = append(phases, "")
			continue
		}
		phases = append(phases, in.Pods[0].Status.Phase)
	}
	if want := []corev1.PodPhase{corev1.PodRunning, "", ""}; !slices.Equal(phases, want) {
		t.Errorf("phases %q, want %q", phases, want)
	}
}
