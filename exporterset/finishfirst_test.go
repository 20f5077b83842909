package exporterset

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	jumpstarterv1alpha1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
)

// While an instance is being finished, at most createsWhileFinishing creates are in
// flight; once it is done, up to the full limit.
func TestFinishFirstGate(t *testing.T) {
	var g finishFirst
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var releases []func(string)
	take := func() {
		t.Helper()
		rel, err := g.create(ctx, 8, false, time.Now)
		if err != nil {
			t.Fatal(err)
		}
		releases = append(releases, rel)
	}
	doneFinishing := g.finish()
	for range createsWhileFinishing {
		take()
	}
	// One more must wait while the instance is being finished.
	got := make(chan func(string), 1)
	go func() {
		rel, err := g.create(ctx, 8, false, time.Now)
		if err == nil {
			got <- rel
		}
	}()
	select {
	case <-got:
		t.Fatalf("a create beyond %d went ahead while an instance was being finished", createsWhileFinishing)
	case <-time.After(100 * time.Millisecond):
	}
	if f, c, _ := g.counts(); f != 1 || c != createsWhileFinishing {
		t.Fatalf("counts finishing=%d creating=%d, want 1 and %d", f, c, createsWhileFinishing)
	}
	doneFinishing()
	select {
	case rel := <-got:
		releases = append(releases, rel)
	case <-time.After(2 * time.Second):
		t.Fatal("the waiting create did not go ahead once nothing was being finished")
	}
	for len(releases) < 8 {
		take()
	}
	// The full limit is reached: the next one waits until ctx ends.
	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancelShort()
	if _, err := g.create(short, 8, false, time.Now); err == nil {
		t.Fatal("a ninth create went ahead with a limit of 8")
	}
	for _, rel := range releases {
		rel("")
	}
	if f, c, b := g.counts(); f != 0 || c != 0 || b != 0 {
		t.Fatalf("counts finishing=%d creating=%d begun=%d after all released", f, c, b)
	}
}

// Windowed, a scale-up begins initialWindow instances; each one finished
// lets one more begin and widens the window; one that is never finished frees its place
// after beginTimeout.
func TestFinishFirstWindow(t *testing.T) {
	var g finishFirst
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	begin := func(ctx context.Context, key string) error {
		rel, err := g.create(ctx, 64, true, time.Now)
		if err != nil {
			return err
		}
		rel(key)
		return nil
	}
	for i := range initialWindow {
		if err := begin(ctx, string(rune('a'+i))); err != nil {
			t.Fatal(err)
		}
	}
	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancelShort()
	if err := begin(short, "x"); err == nil {
		t.Fatalf("instance %d began before any of the first %d came back", initialWindow+1, initialWindow)
	}
	g.finished("a") // finished: its place, and windowGrowth more, may begin
	for k := range 1 + windowGrowth {
		if err := begin(ctx, string(rune('e'+k))); err != nil {
			t.Fatal(err)
		}
	}
	short2, cancelShort2 := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancelShort2()
	if err := begin(short2, "y"); err == nil {
		t.Fatalf("an instance began beyond a window of %d with one finished", initialWindow+windowGrowth)
	}
	// Nothing else is finished: after beginTimeout the begun ones count as finished.
	at := time.Now()
	if err := begin(ctx, "g"); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(at); waited < beginTimeout/2 {
		t.Fatalf("began after %v, before any begun instance timed out (%v)", waited, beginTimeout)
	}
}

// A pass takes up first the instances one write from starting, then those with a
// credential, then the rest, each in the pool's order.
func TestFinishOrder(t *testing.T) {
	mk := func(name string, cred, config, pod bool) *Instance {
		in := &Instance{Exporter: &jumpstarterv1alpha1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: name}}}
		if cred {
			in.Exporter.Status.Credential = &corev1.LocalObjectReference{Name: name + "-token"}
			in.Exporter.Status.Endpoint = "grpc:443"
		}
		if config {
			in.ConfigSecret = &corev1.Secret{}
		}
		if pod {
			in.Pods = []*corev1.Pod{{}}
		}
		return in
	}
	live := []*Instance{
		mk("a-waiting", false, false, false),
		mk("b-cred", true, false, false),
		mk("c-running", true, true, true),
		mk("d-config", true, true, false),
		mk("e-cred", true, false, false),
		mk("f-config-nostart", true, true, false),
	}
	start := map[string]bool{"b-cred": true, "d-config": true, "e-cred": true}
	var got []string
	for _, i := range finishOrder(live, start) {
		got = append(got, live[i].Name())
	}
	want := []string{"d-config", "b-cred", "e-cred", "a-waiting", "c-running", "f-config-nostart"}
	if len(got) != len(want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order %v, want %v", got, want)
		}
	}
}
