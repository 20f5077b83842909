package pool_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// BoardsNotPreferred judges the namespace's ExporterAccessPolicies as upstream's core orders
// free candidates: spot last, then the highest priority, then the name.
func TestBoardsNotPreferred(t *testing.T) {
	board := func(name string, l map[string]string) jumpstarterv1alpha1.Exporter {
		return jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	}
	rule := func(priority int, spot bool) jumpstarterv1alpha1.Policy {
		return jumpstarterv1alpha1.Policy{Priority: priority, SpotAccess: spot, From: []jumpstarterv1alpha1.From{{}}}
	}
	policy := func(name string, sel map[string]string, rules ...jumpstarterv1alpha1.Policy) jumpstarterv1alpha1.ExporterAccessPolicy {
		return jumpstarterv1alpha1.ExporterAccessPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: jumpstarterv1alpha1.ExporterAccessPolicySpec{ExporterSelector: metav1.LabelSelector{MatchLabels: sel}, Policies: rules}}
	}
	physical := map[string]string{"kind": "physical", "board": "x"}
	instance := labels.Set{"board": "x", pool.LabelSet: "pool"}
	virtual := map[string]string{pool.LabelSet: "pool"}
	boards := []jumpstarterv1alpha1.Exporter{board("b2", physical), board("b1", physical)}
	owned := board("inst", map[string]string{"board": "x", pool.LabelSet: "pool"})

	for _, c := range []struct {
		name     string
		policies []jumpstarterv1alpha1.ExporterAccessPolicy
		boards   []jumpstarterv1alpha1.Exporter
		want     string // a part of the note; "" for none
	}{
		{name: "no boards: nothing to say", want: ""},
		{name: "only a set's own instance is matched: nothing to say", boards: []jumpstarterv1alpha1.Exporter{owned}, want: ""},
		{name: "no policy: name order", boards: boards, want: "no ExporterAccessPolicy in the namespace"},
		{name: "boards above instances", boards: boards, want: "",
			policies: []jumpstarterv1alpha1.ExporterAccessPolicy{policy("hw", map[string]string{"kind": "physical"}, rule(20, false)), policy("virt", virtual, rule(10, false))}},
		{name: "one policy for both: same priority", boards: boards, want: "board b1 ranks at priority 10 (ExporterAccessPolicy all), not above the set's instances at 10 (all)",
			policies: []jumpstarterv1alpha1.ExporterAccessPolicy{policy("all", map[string]string{"board": "x"}, rule(10, false))}},
		{name: "instances above boards", boards: boards, want: "board b1 ranks at priority 5",
			policies: []jumpstarterv1alpha1.ExporterAccessPolicy{policy("hw", map[string]string{"kind": "physical"}, rule(5, false)), policy("virt", virtual, rule(10, false))}},
		{name: "a spot rule does not rank a board", boards: boards, want: "board b1 ranks at priority 1",
			policies: []jumpstarterv1alpha1.ExporterAccessPolicy{policy("hw", map[string]string{"kind": "physical"}, rule(50, true), rule(1, false)), policy("virt", virtual, rule(10, false))}},
		{name: "a board no rule approves", boards: boards, want: "board b1 is approved by no ExporterAccessPolicy rule",
			policies: []jumpstarterv1alpha1.ExporterAccessPolicy{policy("virt", virtual, rule(10, false))}},
		{name: "no rule approves the instances: no Lease goes to them", boards: boards, want: "",
			policies: []jumpstarterv1alpha1.ExporterAccessPolicy{policy("hw", map[string]string{"kind": "physical"}, rule(1, false))}},
		{name: "a rule without clients approves nobody", boards: boards, want: "board b1 is approved by no",
			policies: []jumpstarterv1alpha1.ExporterAccessPolicy{policy("hw", map[string]string{"kind": "physical"}, jumpstarterv1alpha1.Policy{Priority: 30}), policy("virt", virtual, rule(10, false))}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := pool.BoardsNotPreferred(c.policies, c.boards, instance)
			if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("BoardsNotPreferred = %q, want %q", got, c.want)
			}
		})
	}
}
