package soak

import (
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/exporterset/exporterset/provisioner/provisionertest"
)

// defaultSweepWalk is one walk of a sweep: 63 walks (the fixed seed and 20 random seeds,
// 3 walks each), with their set-up and settle, took 35 minutes on 2 busy cores.
const defaultSweepWalk = 20 * time.Second

// sweepRequested reports whether the environment asks for a sweep: SOAK_RANDOM_SEEDS or
// SOAK_WALKS set.
func sweepRequested() bool {
	return os.Getenv("SOAK_RANDOM_SEEDS") != "" || os.Getenv("SOAK_WALKS") != ""
}

// sweepRow is one walk's line of the sweep's table.
type sweepRow struct {
	seed       int64
	walk       int
	violations int
	converged  bool
	settle     time.Duration
	err        string // the walk could not run, or its verdict when it failed
}

// testSweep walks every seed several times, one walk after another, and prints a table of
// all walks. The seeds are the fixed ones plus SOAK_RANDOM_SEEDS (default 0) drawn from the
// clock, or SOAK_SEED alone; each is walked SOAK_WALKS times (default 3), SOAK_DURATION each
// (default 20s). The same seed takes the same kinds of steps in the same order each time;
// the cluster's timing differs, so walking it again is not a repeat. A failing walk fails
// its subtest (named after the seed) with the replay command and the sweep goes on.
func testSweep(t *testing.T) {
	perWalk := defaultSweepWalk
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("SOAK_DURATION=%q: want a positive duration such as 20s", v)
		}
		perWalk = d
	}
	walks := envInt(t, "SOAK_WALKS", 3)
	if walks < 1 {
		t.Fatalf("SOAK_WALKS=%d: want at least one walk per seed", walks)
	}
	nRandom := envInt(t, "SOAK_RANDOM_SEEDS", 0)
	var seeds []int64
	if v := os.Getenv("SOAK_SEED"); v != "" {
		seed, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("SOAK_SEED=%q: want an integer", v)
		}
		seeds = []int64{seed}
	} else {
		seeds = append(seeds, fixedSeeds...)
		rng := rand.New(rand.NewSource(time.Now().UnixNano()))
		for i := 0; i < nRandom; i++ {
			seeds = append(seeds, rng.Int63())
		}
	}
	t.Logf("sweep: %d seeds x %d walks of %s: %v", len(seeds), walks, perWalk, seeds)

	pluginDir := t.TempDir()
	provisionertest.BuildPlugin(t, pluginDir, PluginPackage, "container")

	var rows []sweepRow
	start := time.Now()
	for _, seed := range seeds {
		for walk := 1; walk <= walks; walk++ {
			row := sweepRow{seed: seed, walk: walk, err: "the walk could not run"}
			t.Run(fmt.Sprintf("seed=%d_walk=%d", seed, walk), func(t *testing.T) {
				res := runSoak(t, Config{Seed: seed, Duration: perWalk, PluginDir: pluginDir})
				row.err = ""
				row.violations = len(res.Violations)
				row.converged = !res.Failed()
				row.settle = res.ConvergedIn
				t.Log(res.Summary())
				if os.Getenv("SOAK_HISTORY") != "" {
					t.Log("history:\n" + res.HistoryTail)
				}
				if res.Failed() {
					row.err = strings.SplitN(res.Report(), "\n", 2)[0]
					t.Errorf("seed %d walk %d (its walks again: SOAK_SEED=%d make soak-sweep WALK_DURATION=%s): %s", seed, walk, seed, perWalk, res.Report())
				}
			})
			rows = append(rows, row)
		}
	}
	t.Logf("sweep done in %s:\n%s", time.Since(start).Round(time.Second), sweepTable(rows))
}

// sweepTable renders the sweep's rows and a closing line of totals. Settle is the time from
// the end of the walk's quiesce to the final invariants holding (the settle bound when they
// never did).
func sweepTable(rows []sweepRow) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-20s %4s %10s %9s %8s  %s\n", "seed", "walk", "violations", "converged", "settle", "replay")
	converged, violations := 0, 0
	var longest time.Duration
	for _, r := range rows {
		verdict := "no"
		if r.converged {
			verdict = "yes"
			converged++
			longest = max(longest, r.settle)
		}
		violations += r.violations
		replay := ""
		if !r.converged {
			replay = fmt.Sprintf("SOAK_SEED=%d (%s)", r.seed, r.err)
		}
		fmt.Fprintf(&b, "%-20d %4d %10d %9s %8s  %s\n", r.seed, r.walk, r.violations, verdict, r.settle.Round(100*time.Millisecond), replay)
	}
	fmt.Fprintf(&b, "%d walks, %d converged, %d violations, longest settle of a converged walk %s\n",
		len(rows), converged, violations, longest.Round(100*time.Millisecond))
	return b.String()
}

// envInt reads a non-negative integer from the environment, def when unset.
func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		t.Fatalf("%s=%q: want a non-negative integer", name, v)
	}
	return n
}
