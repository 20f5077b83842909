package exporterset

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset/pool"
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

// The cache keeps of an Exporter no set owns what makes it a free board: trimmed, a free
// board is still free and a leased or offline one still is not.
func TestTrimmedBoardKeepsWhatMakesItFree(t *testing.T) {
	board := func(leased, online bool) *jumpstarterv1alpha1.Exporter {
		cond := func(typ string, ok bool) metav1.Condition {
			s := metav1.ConditionFalse
			if ok {
				s = metav1.ConditionTrue
			}
			return metav1.Condition{Type: typ, Status: s, Reason: "Seen", Message: "Last seen less than 1 minute ago"}
		}
		e := &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", Labels: map[string]string{"board": "rpi4"}},
			Spec: jumpstarterv1alpha1.ExporterSpec{Enabled: ptr.To(true)},
			Status: jumpstarterv1alpha1.ExporterStatus{Endpoint: "grpc:443", ExporterStatusValue: jumpstarterv1alpha1.ExporterStatusAvailable,
				Devices:    []jumpstarterv1alpha1.Device{{Uuid: "d"}},
				Conditions: []metav1.Condition{cond(jumpstarterv1alpha1.ExporterConditionOnline, online), cond(jumpstarterv1alpha1.ExporterConditionRegistered, true)}}}
		if leased {
			e.Status.LeaseRef = &corev1.LocalObjectReference{Name: "l"}
			e.Status.ExporterStatusValue = jumpstarterv1alpha1.ExporterStatusLeaseReady
		}
		return e
	}
	for _, c := range []struct {
		name           string
		leased, online bool
	}{{"free", false, true}, {"leased", true, true}, {"offline", false, false}} {
		e := board(c.leased, c.online)
		got, err := trimUnrelatedExporter(e)
		if err != nil {
			t.Fatal(err)
		}
		trimmed := got.(*jumpstarterv1alpha1.Exporter)
		if want, have := pool.FreeBoard(e), pool.FreeBoard(trimmed); want != have {
			t.Errorf("%s board: free %v in full, %v trimmed", c.name, want, have)
		}
		if trimmed.Status.Devices != nil || trimmed.Status.Endpoint != "" {
			t.Errorf("%s board: trimmed copy keeps devices or endpoint", c.name)
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
