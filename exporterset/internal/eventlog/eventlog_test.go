package eventlog

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
)

// recorded is one event as a recorder got it.
type recorded struct {
	Related bool
	Reason  string
	Action  string
	Note    string
}

type captureRecorder struct {
	mu  sync.Mutex
	got []recorded
}

func (c *captureRecorder) Eventf(_ runtime.Object, related runtime.Object, _, reason, action, note string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, recorded{Related: related != nil, Reason: reason, Action: action, Note: fmt.Sprintf(note, args...)})
}

func TestPassEventsAggregatePerReason(t *testing.T) {
	set := &vtv1alpha1.ExporterSet{ObjectMeta: metav1.ObjectMeta{Name: "pool", Namespace: "ns"}}
	var e Batch
	var wg sync.WaitGroup
	for i := 3; i > 0; i-- { // added concurrently and out of order, as configureAll does
		wg.Add(1)
		go func() {
			defer wg.Done()
			e.Add(PodStarted, fmt.Sprintf("pool-%d", i), &corev1.Pod{})
		}()
	}
	wg.Wait()
	e.Add(Created, "pool-9", &corev1.Pod{})
	rec := &captureRecorder{}
	e.Flush(rec, set)
	want := []recorded{
		{Related: true, Reason: string(Created), Action: "Create", Note: "created instance pool-9"},
		{Reason: string(PodStarted), Action: "Start", Note: "started the pods of 3 instances: pool-1, pool-2, pool-3"},
	}
	if d := cmp.Diff(want, rec.got); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}

	rec.got = nil
	e.Flush(rec, set)
	if len(rec.got) != 0 {
		t.Errorf("a second flush recorded %v", rec.got)
	}
}

func TestPassEventsNoteBounded(t *testing.T) {
	var e Batch
	for i := range 300 {
		e.Add(Created, fmt.Sprintf("pool-%08x-%04d", i, i), nil)
	}
	rec := &captureRecorder{}
	e.Flush(rec, &vtv1alpha1.ExporterSet{})
	if len(rec.got) != 1 {
		t.Fatalf("%d events, want 1", len(rec.got))
	}
	note := rec.got[0].Note
	// The events API refuses notes over 1 kB.
	if len(note) > 1024 || !strings.HasPrefix(note, "created 300 instances: pool-00000000-0000, ") || !strings.HasSuffix(note, " more") {
		t.Errorf("note (%d bytes): %s", len(note), note)
	}
	var listed int
	var more int
	head, _, _ := strings.Cut(strings.TrimPrefix(note, "created 300 instances: "), " and ")
	listed = len(strings.Split(head, ", "))
	if _, err := fmt.Sscanf(note[strings.LastIndex(note, " and ")+5:], "%d more", &more); err != nil || listed+more != 300 {
		t.Errorf("%d listed + %d more != 300 (%v): %s", listed, more, err, note)
	}
}

func TestEveryInstanceEventHasABatchedForm(t *testing.T) {
	for _, reason := range []Reason{Created, Configured, PodStarted, PodRestarted, Retiring, Retired, Recycled, Retained} {
		how, ok := batched[reason]
		if !ok || how.action == "" || strings.Count(how.one, "%") != 1 || strings.Count(how.one, "%s") != 1 ||
			strings.Count(how.many, "%") != 2 || strings.Index(how.many, "%d") > strings.Index(how.many, "%s") {
			t.Errorf("%s: %+v", reason, how)
		}
	}
}
