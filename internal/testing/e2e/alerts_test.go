//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/exporterset/exporterset/internal/testing/e2e/node"
	"github.com/exporterset/exporterset/internal/testing/e2e/prom"
	"github.com/exporterset/exporterset/internal/testing/testenv"
	"github.com/exporterset/exporterset/internal/testing/testproc"
)

// The chart values the tier renders the alert rules with (alerts.forOverride and
// alerts.rangeOverride): no rule waits, and a rate or an increase looks back one minute, so
// that each alert fires and resolves within the test.
const (
	alertFor   = "0s"
	alertRange = "1m"
)

// The alert rules (charts/exporterset/files/alerts.yaml, as the chart renders them) seen
// firing in Debian's Prometheus and Alertmanager for real failures on the real node, then
// resolving once each is fixed; the dashboard's queries answered from what was scraped.
// Prometheus scrapes the controller config/default deployed, on its Pod's address.
func TestAlertsOnRealNode(t *testing.T) {
	deployController(t)
	rules := alertRules(t)
	target := controllerMetricsTarget(t)
	st, err := prom.Start(ctx, prom.Options{
		// Under the node's state directory: after a hard kill the tier's teardown stops
		// every process whose command line names it, these two included.
		Dir:    filepath.Join(node.DefaultStateDir, "prometheus"),
		LogDir: filepath.Join(workDir, "logs"), Target: target, Rules: rules, Interval: time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Stop)
	waitScraped(t, st, target)
	ns := newNamespace(t, "alerts")
	startCore(t, ns)
	begin := time.Now()
	t.Run("scenarios", func(t *testing.T) {
		t.Run("image-absent", func(t *testing.T) {
			t.Parallel()
			alertFailure(t, st, ns, "image", imageAbsent)
		})
		t.Run("runtime-exits-1", func(t *testing.T) {
			t.Parallel()
			alertFailure(t, st, ns, "crash", runtimeCrashing)
		})
		t.Run("too-much-cpu", func(t *testing.T) {
			t.Parallel()
			alertFailure(t, st, ns, "cpu", tooMuchCPU)
		})
		t.Run("budget-starving", func(t *testing.T) {
			t.Parallel()
			alertBudget(t, st, ns)
		})
		t.Run("hooks-failing", func(t *testing.T) {
			t.Parallel()
			alertQuarantines(t, st, ns)
		})
	})
	if t.Failed() {
		return
	}
	checkDashboard(t, st, ns, time.Since(begin))
}

// alertRules renders the chart's PrometheusRule (helm template, alerts.enabled and the
// tier's overrides) and returns its groups as a Prometheus rule file.
func alertRules(t *testing.T) []byte {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	helm := os.Getenv("E2E_HELM")
	if helm == "" {
		out, err := exec.Command(filepath.Join(root, "hack", "tools", "build.sh"), "--check", "helm").Output()
		if err != nil {
			t.Fatalf("no helm to render the chart's alert rules: run `make e2e`, which builds it (E2E_HELM): %v", err)
		}
		helm = strings.TrimSpace(string(out))
	}
	out, err := exec.Command(helm, "template", "exporterset", filepath.Join(root, "charts", "exporterset"),
		"-n", controllerNamespace, "--show-only", "templates/prometheusrule.yaml", "--set", "alerts.enabled=true",
		"--set-string", "alerts.forOverride="+alertFor, "--set-string", "alerts.rangeOverride="+alertRange).CombinedOutput()
	if err != nil {
		t.Fatalf("helm template: %v: %s", err, out)
	}
	var pr struct {
		Spec struct {
			Groups []struct {
				Name  string           `json:"name"`
				Rules []map[string]any `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(out, &pr); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			names = append(names, fmt.Sprint(r["alert"]))
			if f, ok := r["for"]; ok && f != alertFor {
				t.Fatalf("rule %v renders for: %v with alerts.forOverride=%s", r["alert"], f, alertFor)
			}
		}
	}
	if len(names) == 0 {
		t.Fatalf("the chart rendered no alert rules:\n%s", out)
	}
	t.Logf("the chart's %d alert rules (for: %s, ranges [%s]): %s", len(names), alertFor, alertRange, strings.Join(names, ", "))
	data, err := yaml.Marshal(map[string]any{"groups": pr.Spec.Groups})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// controllerMetricsTarget is the controller Pod's metrics address: its Pod IP (the host's
// address, as config/default's Pod runs on the host network here) and the metrics port.
func controllerMetricsTarget(t *testing.T) string {
	t.Helper()
	var pods corev1.PodList
	if err := env.Client.List(ctx, &pods, client.InNamespace(controllerNamespace)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && podReady(&p) && p.Status.PodIP != "" {
			target := fmt.Sprintf("%s:%d", p.Status.PodIP, metricsPort)
			t.Logf("Prometheus scrapes the controller's Pod %s at %s", p.Name, target)
			return target
		}
	}
	t.Fatalf("no Ready controller Pod:%s", describePods(pods.Items))
	return ""
}

// waitScraped waits until Prometheus has scraped the controller (up is 1) and reads its
// series: a proxy or a wrong address shows here rather than as alerts that never fire.
func waitScraped(t *testing.T, st *prom.Stack, target string) {
	t.Helper()
	testproc.WaitFor(t, 30*time.Second, "Prometheus to scrape "+target, func() (bool, string) {
		up, err := st.Query(ctx, fmt.Sprintf(`up{job=%q}`, prom.Job))
		if err != nil || len(up) != 1 || up[0].Value != 1 {
			return false, fmt.Sprintf("up: %v %v", up, err)
		}
		n, err := st.Query(ctx, fmt.Sprintf(`count({job=%q, __name__=~"controller_runtime_.+"})`, prom.Job))
		return err == nil && len(n) == 1 && n[0].Value > 0, fmt.Sprintf("controller_runtime_ series: %v %v", n, err)
	})
	t.Logf("Prometheus scrapes %s: up == 1", target)
}

// alertKey names one alert: its rule and the labels that tell this scenario's series apart.
type alertKey struct {
	name   string
	labels map[string]string
}

func (k alertKey) matches(labels map[string]string) bool {
	if labels["alertname"] != k.name {
		return false
	}
	for l, v := range k.labels {
		if labels[l] != v {
			return false
		}
	}
	return true
}

func (k alertKey) String() string {
	var ls []string
	for l, v := range k.labels {
		ls = append(ls, l+"="+v)
	}
	sort.Strings(ls)
	return k.name + "{" + strings.Join(ls, ",") + "}"
}

// waitFiring waits until Alertmanager holds each alert firing, begun at since or later (an
// earlier episode of the same alert is not this one), and logs `ALERT <name> firing after N
// s`, N counted from since.
func waitFiring(t *testing.T, st *prom.Stack, since time.Time, timeout time.Duration, keys ...alertKey) {
	t.Helper()
	awaitAlerts(t, st, timeout, keys, since, nil, time.Time{})
}

// waitResolved waits until each alert has left both Alertmanager's firing alerts and
// Prometheus's pending and firing ones, and logs `ALERT <name> resolved after N s`, N counted
// from the fix.
func waitResolved(t *testing.T, st *prom.Stack, fixed time.Time, timeout time.Duration, keys ...alertKey) {
	t.Helper()
	awaitAlerts(t, st, timeout, nil, time.Time{}, keys, fixed)
}

// waitInactive waits, without an ALERT line, until an earlier episode of the alert is over.
func waitInactive(t *testing.T, st *prom.Stack, timeout time.Duration, k alertKey) {
	t.Helper()
	awaitAlerts(t, st, timeout, nil, time.Time{}, []alertKey{k}, time.Time{})
}

// active says whether Alertmanager holds the alert firing or Prometheus holds it pending or
// firing.
func (k alertKey) active(alerts []prom.Alert, rules []prom.RuleAlert, now time.Time) bool {
	for _, a := range alerts {
		if k.matches(a.Labels) && a.Firing(now) {
			return true
		}
	}
	for _, r := range rules {
		if k.matches(r.Labels) {
			return true
		}
	}
	return false
}

// awaitAlerts waits for some alerts to fire and others to resolve at once, so that each is
// timed when it happens whatever the order.
func awaitAlerts(t *testing.T, st *prom.Stack, timeout time.Duration, fire []alertKey, since time.Time, resolve []alertKey, fixed time.Time) {
	t.Helper()
	fire, resolve = append([]alertKey(nil), fire...), append([]alertKey(nil), resolve...)
	testproc.WaitFor(t, timeout, fmt.Sprintf("%v firing, %v resolved", fire, resolve), func() (bool, string) {
		alerts, err := st.Alerts(ctx)
		if err != nil {
			return false, err.Error()
		}
		rules, err := st.RuleAlerts(ctx)
		if err != nil {
			return false, err.Error()
		}
		now := time.Now()
		fire = slices.DeleteFunc(fire, func(k alertKey) bool {
			for _, a := range alerts {
				if k.matches(a.Labels) && a.Firing(now) && !a.StartsAt.Before(since.Add(-time.Second)) {
					t.Logf("ALERT %s firing after %.1f s (%s)", k.name, now.Sub(since).Seconds(), k)
					return true
				}
			}
			return false
		})
		resolve = slices.DeleteFunc(resolve, func(k alertKey) bool {
			if k.active(alerts, rules, now) {
				return false
			}
			if !fixed.IsZero() {
				t.Logf("ALERT %s resolved after %.1f s (%s)", k.name, now.Sub(fixed).Seconds(), k)
			}
			return true
		})
		return len(fire)+len(resolve) == 0, fmt.Sprintf("not firing yet: %v; not resolved yet: %v; Alertmanager holds: %s", fire, resolve, describeAlerts(alerts))
	})
}

// describeAlerts is one entry per alert Alertmanager holds, for a failed wait.
func describeAlerts(alerts []prom.Alert) string {
	var b strings.Builder
	for _, a := range alerts {
		fmt.Fprintf(&b, "\n  %s %v %s since %s until %s", a.Labels["alertname"], a.Labels, a.Status.State,
			a.StartsAt.Format("15:04:05"), a.EndsAt.Format("15:04:05"))
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}
