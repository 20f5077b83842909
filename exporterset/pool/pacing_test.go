package pool_test

import (
	"testing"
	"time"

	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/pool"
	corev1 "k8s.io/api/core/v1"
)

func configured(in *pool.Instance) { in.ConfigSecret = &corev1.Secret{} }

// The window: initialWindow before anything is finished, growing by windowGrowth per
// instance finished; an unfinished instance holds its place for beginTimeout only.
func TestCreateRoom(t *testing.T) {
	now := fixture.Epoch.Add(500 * time.Millisecond) // instances below are created at epoch
	cases := []struct {
		name      string
		instances []*pool.Instance
		expected  int32
		limit     int32
		room      int32
		wake      time.Duration
	}{
		{"empty pool", nil, 0, 1000, pool.InitialWindow, 0},
		{"creates in flight count", nil, 3, 1000, pool.InitialWindow - 3, 0},
		{"window full", []*pool.Instance{fixture.Instance("a"), fixture.Instance("b"), fixture.Instance("c")}, 1, 1000, 0, 2500 * time.Millisecond},
		{"one finished by its config", []*pool.Instance{fixture.Instance("a", configured), fixture.Instance("b")}, 0, 1000, pool.InitialWindow + pool.WindowGrowth - 1, 2500 * time.Millisecond},
		{"one finished by its Pod", []*pool.Instance{fixture.Instance("a", fixture.Pod(corev1.PodPending)), fixture.Instance("b")}, 0, 1000, pool.InitialWindow + pool.WindowGrowth - 1, 2500 * time.Millisecond},
		{"retiring and deleting hold no place", []*pool.Instance{fixture.Instance("a", fixture.Retiring), fixture.Instance("b", fixture.Deleting)}, 0, 1000, pool.InitialWindow, 0},
		{"a lapsed place counts as finished", []*pool.Instance{fixture.Instance("old", fixture.CreatedAt(-3*time.Second)), fixture.Instance("b")}, 0, 1000, pool.InitialWindow + pool.WindowGrowth - 1, 2500 * time.Millisecond},
		{"a pool of 100 finished", hundred(), 0, 1000, pool.InitialWindow + pool.WindowGrowth*100, 0},
		{"the limit bounds the window", hundred(), 0, 64, 64, 0},
		{"the limit counts what is begun", append(hundred(), fixture.Instance("b")), 3, 64, 60, 2500 * time.Millisecond},
	}
	for _, c := range cases {
		room, wake := pool.CreateRoom(c.instances, c.expected, now, c.limit)
		if room != c.room || wake != c.wake {
			t.Errorf("%s: room %d, wake %v; want %d, %v", c.name, room, wake, c.room, c.wake)
		}
	}
}

func hundred() (out []*pool.Instance) {
	for range 100 {
		out = append(out, fixture.Instance("x", fixture.Ready))
	}
	return out
}
