package pool

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

func configured(in *Instance) { in.ConfigSecret = &corev1.Secret{} }

// The window: initialWindow before anything is finished, growing by windowGrowth per
// instance finished; an unfinished instance holds its place for beginTimeout only.
func TestCreateRoom(t *testing.T) {
	now := epoch.Add(500 * time.Millisecond) // instances below are created at epoch
	cases := []struct {
		name      string
		instances []*Instance
		expected  int32
		limit     int32
		room      int32
		wake      time.Duration
	}{
		{"empty pool", nil, 0, 1000, initialWindow, 0},
		{"creates in flight count", nil, 3, 1000, initialWindow - 3, 0},
		{"window full", []*Instance{instance("a"), instance("b"), instance("c")}, 1, 1000, 0, 2500 * time.Millisecond},
		{"one finished by its config", []*Instance{instance("a", configured), instance("b")}, 0, 1000, initialWindow + windowGrowth - 1, 2500 * time.Millisecond},
		{"one finished by its Pod", []*Instance{instance("a", pod(corev1.PodPending)), instance("b")}, 0, 1000, initialWindow + windowGrowth - 1, 2500 * time.Millisecond},
		{"retiring and deleting hold no place", []*Instance{instance("a", retiring), instance("b", deleting)}, 0, 1000, initialWindow, 0},
		{"a lapsed place counts as finished", []*Instance{instance("old", createdAt(-3*time.Second)), instance("b")}, 0, 1000, initialWindow + windowGrowth - 1, 2500 * time.Millisecond},
		{"a pool of 100 finished", hundred(), 0, 1000, initialWindow + windowGrowth*100, 0},
		{"the limit bounds the window", hundred(), 0, 64, 64, 0},
		{"the limit counts what is begun", append(hundred(), instance("b")), 3, 64, 60, 2500 * time.Millisecond},
	}
	for _, c := range cases {
		room, wake := CreateRoom(c.instances, c.expected, now, c.limit)
		if room != c.room || wake != c.wake {
			t.Errorf("%s: room %d, wake %v; want %d, %v", c.name, room, wake, c.room, c.wake)
		}
	}
}

func hundred() (out []*Instance) {
	for range 100 {
		out = append(out, instance("x", ready))
	}
	return out
}
