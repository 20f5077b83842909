package exporterset

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

func TestReusePolicyOf(t *testing.T) {
	withAnn := func(a map[string]string) metav1.ObjectMeta { return metav1.ObjectMeta{Annotations: a} }
	for _, tc := range []struct {
		name     string
		set, cls map[string]string
		want     reusePolicy
		problems []string // substrings, one per problem
	}{{
		name: "defaults",
		want: reusePolicy{quarantineTTL: 30 * time.Minute, maxQuarantined: 1},
	}, {
		name: "the class's values",
		cls:  map[string]string{AnnotationQuarantineTTL: "5m", AnnotationMaxQuarantined: "0", AnnotationMaxUseCount: "2", AnnotationMaxIdleAge: "20s"},
		want: reusePolicy{quarantineTTL: 5 * time.Minute, maxQuarantined: 0, maxUseCount: 2, maxIdleAge: 20 * time.Second},
	}, {
		name: "the set's win over the class's",
		set:  map[string]string{AnnotationMaxUseCount: "3"},
		cls:  map[string]string{AnnotationMaxUseCount: "2", AnnotationMaxIdleAge: "1h"},
		want: reusePolicy{quarantineTTL: 30 * time.Minute, maxQuarantined: 1, maxUseCount: 3, maxIdleAge: time.Hour},
	}, {
		name:     "unreadable values keep their defaults and are reported",
		set:      map[string]string{AnnotationQuarantineTTL: "soon", AnnotationMaxUseCount: "-1", AnnotationMaxIdleAge: "0s"},
		cls:      map[string]string{AnnotationMaxQuarantined: "many"},
		want:     reusePolicy{quarantineTTL: 30 * time.Minute, maxQuarantined: 1},
		problems: []string{`quarantine-ttl="soon" on the ExporterSet: not a duration`, `max-quarantined="many" on the VirtualTargetClass`, `max-use-count="-1"`, `max-idle-age="0s" on the ExporterSet: must be positive`},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			set := &vtv1alpha1.ExporterSet{ObjectMeta: withAnn(tc.set)}
			cls := &vtv1alpha1.VirtualTargetClass{ObjectMeta: withAnn(tc.cls)}
			got, problems := reusePolicyOf(set, cls)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(reusePolicy{})); diff != "" {
				t.Errorf("policy (-want +got):\n%s", diff)
			}
			if len(problems) != len(tc.problems) {
				t.Fatalf("problems %v, want %d", problems, len(tc.problems))
			}
			for i, want := range tc.problems {
				if !strings.Contains(problems[i].String(), want) {
					t.Errorf("problem %d %q does not say %q", i, problems[i], want)
				}
			}
		})
	}
	if _, problems := reusePolicyOf(&vtv1alpha1.ExporterSet{}, nil); problems != nil {
		t.Errorf("no class: %v", problems)
	}
}
