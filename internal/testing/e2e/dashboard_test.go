//go:build e2e

package e2e

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/exporterset/exporterset/internal/testing/e2e/prom"
	"github.com/exporterset/exporterset/internal/testing/testenv"
)

// dashboardPanel is what the check reads of a Grafana panel: its title, its queries and
// the panels a row holds.
type dashboardPanel struct {
	Title   string `json:"title"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	Panels []dashboardPanel `json:"panels"`
}

// checkDashboard runs every query of the chart's Grafana dashboard
// (charts/exporterset/files/dashboard.json) against the real Prometheus, as Grafana would
// over the scenario just run: $namespace is its namespace, $exporterset every set (Grafana's
// "All"), and $__rate_interval (and $__interval) the whole span, so that a rate or an
// increase covers every event of it. It fails on a query error, on a query that returns no
// series, and on a panel none of whose series has a value (only NaN: a ratio or quantile
// of nothing), and logs one DASHBOARD line per panel.
func checkDashboard(t *testing.T, st *prom.Stack, ns string, span time.Duration) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "charts", "exporterset", "files", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []dashboardPanel `json:"panels"`
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	window := fmt.Sprintf("%ds", int(span.Seconds())+30)
	vars := strings.NewReplacer(
		"${__rate_interval}", window, "$__rate_interval", window,
		"${__interval}", window, "$__interval", window,
		"${namespace}", ns, "$namespace", ns,
		"${exporterset}", ".+", "$exporterset", ".+",
	)
	panels := flatten(dash.Panels)
	if len(panels) == 0 {
		t.Fatal("the dashboard has no panels")
	}
	for _, p := range panels {
		series, valued := 0, 0
		example := ""
		for _, target := range p.Targets {
			q := vars.Replace(target.Expr)
			if strings.Contains(q, "$") {
				t.Errorf("panel %q: a template variable the check does not know: %s", p.Title, q)
				continue
			}
			samples, err := st.Query(ctx, q)
			if err != nil {
				t.Errorf("panel %q: %v", p.Title, err)
				continue
			}
			if len(samples) == 0 {
				t.Errorf("panel %q: no series for %s", p.Title, q)
			}
			series += len(samples)
			for _, s := range samples {
				if !math.IsNaN(s.Value) {
					valued++
					if example == "" {
						example = fmt.Sprintf("%v = %g", s.Labels, s.Value)
					}
				}
			}
		}
		if valued == 0 {
			t.Errorf("panel %q: none of its %d series has a value (NaN only)", p.Title, series)
		}
		t.Logf("DASHBOARD %q: %d queries, %d series, %d with a value (e.g. %s)", p.Title, len(p.Targets), series, valued, example)
	}
}

// flatten lists the panels with queries, a row's panels included.
func flatten(panels []dashboardPanel) []dashboardPanel {
	var out []dashboardPanel
	for _, p := range panels {
		if len(p.Targets) > 0 {
			out = append(out, p)
		}
		out = append(out, flatten(p.Panels)...)
	}
	return out
}
