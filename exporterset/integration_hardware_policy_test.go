package exporterset_test

import (
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// A set with a board is told when upstream's core would not hand the board out before its
// virtual instances (hardware_policy.go): without an ExporterAccessPolicy (name order), and
// with one rule for both; not when a policy ranks the boards higher.
func TestBoardsNotPreferredWarns(t *testing.T) {
	everyone := []jumpstarterv1alpha1.From{{}}
	policy := func(name string, sel metav1.LabelSelector, priority int) *jumpstarterv1alpha1.ExporterAccessPolicy {
		return &jumpstarterv1alpha1.ExporterAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: jumpstarterv1alpha1.ExporterAccessPolicySpec{ExporterSelector: sel,
				Policies: []jumpstarterv1alpha1.Policy{{Priority: priority, From: everyone}}}}
	}
	physical := metav1.LabelSelector{MatchLabels: map[string]string{"kind": "physical"}}
	virtual := metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: pool.LabelSet, Operator: metav1.LabelSelectorOpExists}}}
	for _, c := range []struct {
		name     string
		policies []*jumpstarterv1alpha1.ExporterAccessPolicy
		want     string // in the LeasesWait message and the event; "" for neither
	}{
		{name: "no policy", want: "no ExporterAccessPolicy in the namespace"},
		{name: "one rule for both", policies: []*jumpstarterv1alpha1.ExporterAccessPolicy{policy("all", metav1.LabelSelector{}, 10)},
			want: "board board-a ranks at priority 10 (ExporterAccessPolicy all), not above the set's instances at 10 (all)"},
		{name: "boards first", policies: []*jumpstarterv1alpha1.ExporterAccessPolicy{policy("boards-first", physical, 20), policy("virtual-fallback", virtual, 10)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := newWorld(t)
			for _, p := range c.policies {
				w.create(p)
			}
			w.create(&jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: "board-a",
				Labels: map[string]string{"board": "hw", "kind": "physical"}}})
			w.class("fake")
			w.controller(env.Config)
			w.set("hw", 0, 3, 1, func(s *vtv1alpha1.ExporterSet) {
				s.Annotations = map[string]string{exporterset.AnnotationHardwareSelector: "kind=physical"}
			})
			st := w.waitHealthy("hw", 1, 30*time.Second) // the board is offline: an instance of the set serves
			lw := apimeta.FindStatusCondition(st.Conditions, vtv1alpha1.ConditionLeasesWait)
			if lw == nil || lw.Status != metav1.ConditionTrue {
				t.Fatalf("LeasesWait %v, want True", lw)
			}
			notes := w.eventNotes("hw", "BoardsNotPreferred")
			if c.want == "" {
				if strings.Contains(lw.Message, "boards first not assured") || len(notes) != 0 {
					t.Errorf("boards ranked first, yet LeasesWait says %q and events %q", lw.Message, notes)
				}
				return
			}
			if !strings.Contains(lw.Message, "boards first not assured: "+c.want) {
				t.Errorf("LeasesWait message %q lacks %q", lw.Message, c.want)
			}
			w.eventually(10*time.Second, "a BoardsNotPreferred event", func() string {
				if notes = w.eventNotes("hw", "BoardsNotPreferred"); len(notes) == 0 {
					return "none"
				}
				return ""
			})
			if len(notes) != 1 || !strings.Contains(notes[0], c.want) {
				t.Errorf("BoardsNotPreferred events %q, want one quoting %q", notes, c.want)
			}
		})
	}
}
