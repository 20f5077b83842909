package exporterset_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"

	"github.com/exporterset/exporterset/exporterset"
)

// The operator-facing files this test keeps honest, relative to this package.
const (
	metricsDoc   = "../docs/metrics.md"
	runbooksDoc  = "../docs/runbooks.md"
	alertsFile   = "../charts/exporterset/files/alerts.yaml"
	dashboardDoc = "../charts/exporterset/files/dashboard.json"
)

// exportedMetric is a series family the controller registers.
type exportedMetric struct {
	typ    string // gauge, counter or histogram
	labels []string
}

// captureRegisterer keeps what a reconciler registers, so the test reads names, label names
// and types from the collectors themselves.
type captureRegisterer struct{ cs []prometheus.Collector }

func (c *captureRegisterer) Register(col prometheus.Collector) error {
	c.cs = append(c.cs, col)
	return nil
}

func (c *captureRegisterer) MustRegister(cols ...prometheus.Collector) { c.cs = append(c.cs, cols...) }

func (c *captureRegisterer) Unregister(prometheus.Collector) bool { return false }

var descRE = regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)

// exportedMetrics registers a reconciler's metrics and describes them.
func exportedMetrics(t *testing.T) map[string]exportedMetric {
	t.Helper()
	reg := &captureRegisterer{}
	exporterset.NewReconciler(nil, nil, nil, exporterset.WithMetrics(reg))
	out := map[string]exportedMetric{}
	for _, c := range reg.cs {
		var typ string
		switch c.(type) {
		case *prometheus.GaugeVec, prometheus.Gauge:
			typ = "gauge"
		case *prometheus.CounterVec, prometheus.Counter:
			typ = "counter"
		case *prometheus.HistogramVec, prometheus.Histogram:
			typ = "histogram"
		default:
			t.Fatalf("collector of unexpected type %T: teach this test its type", c)
		}
		ch := make(chan *prometheus.Desc, 1)
		go func() { c.Describe(ch); close(ch) }()
		for d := range ch {
			m := descRE.FindStringSubmatch(d.String())
			if m == nil {
				t.Fatalf("cannot read descriptor %s", d)
			}
			var labels []string
			if m[2] != "" {
				labels = strings.Split(m[2], ",")
			}
			sort.Strings(labels)
			out[m[1]] = exportedMetric{typ: typ, labels: labels}
		}
	}
	if len(out) < 10 {
		t.Fatalf("only %d metrics registered: %v", len(out), out)
	}
	return out
}

var docRowRE = regexp.MustCompile("^\\| `(exporterset_[a-z_]+)` \\| (gauge|counter|histogram) \\| ([^|]*) \\| [^|]+ \\|$")

// documentedMetrics reads the table of docs/metrics.md.
func documentedMetrics(t *testing.T) map[string]exportedMetric {
	t.Helper()
	b, err := os.ReadFile(metricsDoc)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]exportedMetric{}
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "| `exporterset_") {
			continue
		}
		m := docRowRE.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("%s: a metric row not of the form | `name` | type | labels | meaning |: %s", metricsDoc, line)
			continue
		}
		labels := regexp.MustCompile("`([a-z_]+)`").FindAllStringSubmatch(m[3], -1)
		var names []string
		for _, l := range labels {
			names = append(names, l[1])
		}
		sort.Strings(names)
		out[m[1]] = exportedMetric{typ: m[2], labels: names}
	}
	return out
}

// TestMetricsDocumented: the table in docs/metrics.md is what the controller registers.
func TestMetricsDocumented(t *testing.T) {
	have, doc := exportedMetrics(t), documentedMetrics(t)
	for name, m := range have {
		d, ok := doc[name]
		switch {
		case !ok:
			t.Errorf("%s (%s, labels %v) is registered but not in %s", name, m.typ, m.labels, metricsDoc)
		case d.typ != m.typ || fmt.Sprint(d.labels) != fmt.Sprint(m.labels):
			t.Errorf("%s: documented as %s with labels %v, registered as %s with %v", name, d.typ, d.labels, m.typ, m.labels)
		}
	}
	for name := range doc {
		if _, ok := have[name]; !ok {
			t.Errorf("%s is documented in %s but not registered", name, metricsDoc)
		}
	}
}

// PromQL words that are not series names.
var promqlKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true}

var promqlFunctions = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "count": true, "rate": true, "irate": true, "increase": true,
	"histogram_quantile": true, "changes": true, "min_over_time": true, "max_over_time": true, "delta": true, "clamp_min": true,
}

var (
	groupingRE = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)`)
	matcherRE  = regexp.MustCompile(`\{([^}]*)\}`)
	labelRE    = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)`)
	rangeRE    = regexp.MustCompile(`\[[^\]]*\]`)
	offsetRE   = regexp.MustCompile(`\boffset\s+-?[0-9a-z]+`)
	stringRE   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	identRE    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	numberRE   = regexp.MustCompile(`\b[0-9][0-9.eE+-]*\b`)
)

// promqlNames returns the series names and the label names an expression uses, and an error
// for a function this small reader does not know (a new one is added to the list above).
func promqlNames(expr string) (series, labels []string, err error) {
	for _, g := range groupingRE.FindAllStringSubmatch(expr, -1) {
		for _, l := range strings.Split(g[2], ",") {
			if l = strings.TrimSpace(l); l != "" {
				labels = append(labels, l)
			}
		}
	}
	e := groupingRE.ReplaceAllString(expr, " ")
	for _, m := range matcherRE.FindAllStringSubmatch(e, -1) {
		for _, l := range labelRE.FindAllStringSubmatch(stringRE.ReplaceAllString(m[1], `""`), -1) {
			labels = append(labels, l[1])
		}
	}
	e = matcherRE.ReplaceAllString(e, " ")
	e = rangeRE.ReplaceAllString(e, " ")
	e = offsetRE.ReplaceAllString(e, " ")
	e = stringRE.ReplaceAllString(e, " ")
	e = numberRE.ReplaceAllString(e, " ")
	for _, tok := range identRE.FindAllString(e, -1) {
		if strings.HasSuffix(tok, "(") {
			fn := strings.TrimSpace(strings.TrimSuffix(tok, "("))
			if !promqlFunctions[fn] {
				return nil, nil, fmt.Errorf("unknown function %q in %q", fn, expr)
			}
			continue
		}
		if !promqlKeywords[strings.ToLower(tok)] {
			series = append(series, tok)
		}
	}
	return series, labels, nil
}

// checkExpr fails the test when expr names a series or label the controller does not export.
func checkExpr(t *testing.T, where, expr string, have map[string]exportedMetric) {
	t.Helper()
	for _, p := range exprProblems(expr, have) {
		t.Errorf("%s: %s", where, p)
	}
}

// exprProblems lists the series and labels of expr that the controller does not export.
func exprProblems(expr string, have map[string]exportedMetric) (out []string) {
	series, labels, err := promqlNames(expr)
	if err != nil {
		return []string{err.Error()}
	}
	if len(series) == 0 {
		out = append(out, fmt.Sprintf("%q names no series", expr))
	}
	allowed := map[string]bool{}
	for _, s := range series {
		m, ok := have[s]
		if ok && m.typ == "histogram" {
			out = append(out, fmt.Sprintf("%q is a histogram: its series are %[1]s_bucket, _sum and _count (in %q)", s, expr))
			continue
		}
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			if h, isH := have[strings.TrimSuffix(s, suffix)]; !ok && isH && strings.HasSuffix(s, suffix) && h.typ == "histogram" {
				m, ok = h, true
				allowed["le"] = allowed["le"] || suffix == "_bucket"
			}
		}
		if !ok {
			out = append(out, fmt.Sprintf("%q is not a series the controller exports (in %q)", s, expr))
			continue
		}
		for _, l := range m.labels {
			allowed[l] = true
		}
	}
	for _, l := range labels {
		if !allowed[l] {
			out = append(out, fmt.Sprintf("label %q is not a label of %v (in %q)", l, series, expr))
		}
	}
	return out
}

// TestMonitoringUsesExportedMetrics parses the alert rules and the dashboard, and checks that
// every expression and panel query names only series and labels the controller registers,
// and that every alert links to a runbook section that exists.
func TestMonitoringUsesExportedMetrics(t *testing.T) {
	have := exportedMetrics(t)

	raw, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string `json:"name"`
			Rules []struct {
				Alert       string            `json:"alert"`
				Expr        string            `json:"expr"`
				For         string            `json:"for"`
				Labels      map[string]string `json:"labels"`
				Annotations map[string]string `json:"annotations"`
			} `json:"rules"`
		} `json:"groups"`
	}
	if err := yaml.UnmarshalStrict(raw, &rules); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	runbooks, err := os.ReadFile(runbooksDoc)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]bool{}
	for _, line := range strings.Split(string(runbooks), "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			anchors[strings.ToLower(strings.ReplaceAll(strings.TrimSpace(h), " ", "-"))] = true
		}
	}
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts++
			checkExpr(t, "alert "+r.Alert, r.Expr, have)
			url := r.Annotations["runbook_url"]
			_, anchor, ok := strings.Cut(url, "docs/runbooks.md#")
			if !ok || !anchors[anchor] {
				t.Errorf("alert %s: runbook_url %q is not a section of %s (sections: %v)", r.Alert, url, runbooksDoc, anchors)
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("alert %s: needs a severity label and a summary", r.Alert)
			}
		}
	}
	if alerts < 5 {
		t.Errorf("%s has %d alerts, want at least 5", alertsFile, alerts)
	}

	raw, err = os.ReadFile(dashboardDoc)
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Name  string          `json:"name"`
				Type  string          `json:"type"`
				Query json.RawMessage `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("%s: %v", dashboardDoc, err)
	}
	if dash.UID == "" || len(dash.Panels) < 5 {
		t.Errorf("%s: uid %q and %d panels, want a uid and at least 5 panels", dashboardDoc, dash.UID, len(dash.Panels))
	}
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			checkExpr(t, "panel "+p.Title, q.Expr, have)
		}
	}
	labelValues := regexp.MustCompile(`^label_values\((.+),\s*([a-z_]+)\)$`)
	for _, v := range dash.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Errorf("variable %s: %v", v.Name, err)
			continue
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Errorf("variable %s: query %q is not label_values(series, label)", v.Name, q.Query)
			continue
		}
		checkExpr(t, "variable "+v.Name, fmt.Sprintf("max by (%s) (%s)", m[2], m[1]), have)
	}
}

// TestPromQLNamesCanFail: the reader behind the checks above finds what it must find.
func TestPromQLNamesCanFail(t *testing.T) {
	have := map[string]exportedMetric{"exporterset_x_seconds": {typ: "histogram", labels: []string{"namespace"}}, "exporterset_y": {typ: "gauge", labels: []string{"namespace"}}}
	good := `histogram_quantile(0.95, sum by (namespace, le) (rate(exporterset_x_seconds_bucket{namespace=~"$ns"}[5m]))) > 1 and exporterset_y == 0`
	series, labels, err := promqlNames(good)
	if err != nil || fmt.Sprint(series) != "[exporterset_x_seconds_bucket exporterset_y]" || fmt.Sprint(labels) != "[namespace le namespace]" {
		t.Errorf("promqlNames(%q) = %v, %v, %v", good, series, labels, err)
	}
	for _, bad := range []string{
		`exporterset_z > 0`,                        // not exported
		`exporterset_x_seconds > 0`,                // a histogram has no series of its bare name
		`sum by (reason) (exporterset_y)`,          // not its label
		`exporterset_y{exporterset="a"}`,           // not its label
		`sum(rate(exporterset_y_bucket[5m]))`,      // not a histogram
		`absent_over_time(exporterset_y[5m])`,      // a function the reader does not know
		`exporterset_x_seconds_count{le="1"} == 0`, // le belongs to _bucket only
	} {
		if len(exprProblems(bad, have)) == 0 {
			t.Errorf("%q passed the check", bad)
		}
	}
}
