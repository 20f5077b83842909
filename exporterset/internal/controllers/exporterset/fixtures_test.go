package exporterset

import (
	"time"

	"github.com/exporterset/exporterset/exporterset/internal/fixture"
	"github.com/exporterset/exporterset/exporterset/pool"
)

// observeFixtures is failureMemory.observe with the fixture instances' problems.
func observeFixtures(m failureMemory, key, version string, now time.Time, instances []*pool.Instance, base, limit time.Duration) pool.Backoff {
	return m.observe(key, version, now, instances, fixture.ProblemsOf(instances), base, limit)
}
