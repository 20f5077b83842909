package soak

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/exporterset/exporterset/internal/testing/testenv"
	"github.com/exporterset/exporterset/provisioner/provisionertest"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	// The walk makes the reconciler fail on purpose many times a second: its error logs
	// would drown the report. SOAK_VERBOSE=1 shows everything.
	level := zapcore.DPanicLevel
	if os.Getenv("SOAK_VERBOSE") != "" {
		level = zapcore.DebugLevel
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(false), zap.Level(level)))
	testenv.Main(m, &env)
}

// defaultSoakDuration is the whole walk of `go test ./...` and CI: half with seed 1, half
// with a random seed.
const defaultSoakDuration = 2 * time.Minute

// fixedSeeds are walked by every run of the soak that does not replay one seed.
var fixedSeeds = []int64{1}

// TestSoak runs the chaos soak. SOAK_DURATION (default 2m) is the total walk time: with
// SOAK_SEED it all goes to that seed (a replay); without, it is split between the fixed seed
// 1 and a seed drawn from the clock, printed first so that a failure can be replayed.
// SOAK_HISTORY=1 prints the history of passing runs too. SOAK_RANDOM_SEEDS or SOAK_WALKS
// turn it into a sweep instead (sweep_test.go).
func TestSoak(t *testing.T) {
	if sweepRequested() {
		testSweep(t)
		return
	}
	total := defaultSoakDuration
	if v := os.Getenv("SOAK_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("SOAK_DURATION=%q: want a positive duration such as 2m or 30m", v)
		}
		total = d
	}
	type run struct {
		seed     int64
		duration time.Duration
	}
	var runs []run
	if v := os.Getenv("SOAK_SEED"); v != "" {
		seed, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("SOAK_SEED=%q: want an integer", v)
		}
		runs = []run{{seed, total}}
	} else {
		random := time.Now().UnixNano()
		runs = []run{{fixedSeeds[0], total / 2}, {random, total - total/2}}
	}
	pluginDir := t.TempDir()
	provisionertest.BuildPlugin(t, pluginDir, PluginPackage, "container")

	for _, r := range runs {
		t.Run(fmt.Sprintf("seed=%d", r.seed), func(t *testing.T) {
			t.Logf("seed %d", r.seed)
			res := runSoak(t, Config{Seed: r.seed, Duration: r.duration, PluginDir: pluginDir})
			t.Log(res.Summary())
			if os.Getenv("SOAK_HISTORY") != "" {
				t.Log("history:\n" + res.HistoryTail)
			}
			if res.Failed() {
				t.Fatal(res.Report())
			}
		})
	}
}

// runSoak runs one soak in a fresh namespace of the shared API server.
func runSoak(t *testing.T, cfg Config) *Result {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns, err := env.CreateNamespace(ctx, "soak")
	if err != nil {
		t.Fatal(err)
	}
	cfg.REST, cfg.Namespace = env.Config, ns
	cfg.Logf = t.Logf
	res, err := Run(ctx, cfg)
	if err != nil {
		if res != nil {
			t.Log(res.Report())
		}
		t.Fatalf("seed %d: the soak could not run: %v", cfg.Seed, err)
	}
	return res
}
