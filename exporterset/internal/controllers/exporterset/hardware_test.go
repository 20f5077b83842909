package exporterset

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// The set's annotation wins over its class's; a bad or empty one blocks, naming where it is.
func TestHardwareSelectorOf(t *testing.T) {
	set := func(v *string) *vtv1alpha1.ExporterSet {
		s := &vtv1alpha1.ExporterSet{}
		if v != nil {
			s.Annotations = map[string]string{AnnotationHardwareSelector: *v}
		}
		return s
	}
	class := func(v string) *vtv1alpha1.VirtualTargetClass {
		return &vtv1alpha1.VirtualTargetClass{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationHardwareSelector: v}}}
	}
	cases := []struct {
		name    string
		set     *vtv1alpha1.ExporterSet
		cls     *vtv1alpha1.VirtualTargetClass
		matches labels.Set // nil: no selector expected
		blocked string     // a part of the blocker's message; "" for none
	}{
		{name: "none", set: set(nil), cls: nil},
		{name: "the set's", set: set(ptr.To("board=rpi4,kind=physical")), matches: labels.Set{"board": "rpi4", "kind": "physical"}},
		{name: "the set's wins", set: set(ptr.To("board=rpi4")), cls: class("board=jetson"), matches: labels.Set{"board": "rpi4"}},
		{name: "the class's when the set has none", set: set(nil), cls: class("board in (jetson, orin)"), matches: labels.Set{"board": "orin"}},
		{name: "bad on the class", set: set(nil), cls: class("board in (jetson"), blocked: "on the VirtualTargetClass"},
		{name: "empty on the set", set: set(ptr.To("")), cls: class("board=jetson"), blocked: "an empty selector"},
	}
	for _, c := range cases {
		sel, b := hardwareSelectorOf(c.set, c.cls)
		switch {
		case c.blocked != "":
			if b == nil || b.reason != vtv1alpha1.ReasonInvalidSelector || !strings.Contains(b.message, c.blocked) || !strings.Contains(b.message, AnnotationHardwareSelector) {
				t.Errorf("%s: blocker %+v, want InvalidSelector naming the annotation and %q", c.name, b, c.blocked)
			}
		case b != nil:
			t.Errorf("%s: blocked: %s", c.name, b.message)
		case c.matches == nil && sel != nil:
			t.Errorf("%s: selector %s, want none", c.name, sel)
		case c.matches != nil && (sel == nil || !sel.Matches(c.matches)):
			t.Errorf("%s: selector %v does not match %v", c.name, sel, c.matches)
		}
	}
}

func TestBoardsNote(t *testing.T) {
	for _, c := range []struct {
		boards []string
		want   string
	}{
		{nil, ""},
		{[]string{"a"}, "; 1 free board counts toward the buffer of 2 (a)"},
		{[]string{"a", "b"}, "; 2 free boards count toward the buffer of 2 (a, b)"},
		{[]string{"a", "b", "c", "d", "e", "f", "g"}, "; 7 free boards count toward the buffer of 2 (a, b, c, d, e, ...)"},
	} {
		if got := boardsNote(c.boards, 2); got != c.want {
			t.Errorf("boardsNote(%v) = %q, want %q", c.boards, got, c.want)
		}
	}
}
