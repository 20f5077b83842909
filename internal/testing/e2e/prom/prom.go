// Package prom runs Debian's Prometheus and Alertmanager as host processes for the real-node
// tier's alerts scenario (`make e2e` installs both), and reads their HTTP APIs: Prometheus
// scrapes one /metrics target with the chart's rules loaded and sends its alerts to the
// Alertmanager.
package prom

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/exporterset/exporterset/internal/testing/testproc"
)

// Options configure Start.
type Options struct {
	// Dir holds both programs' configuration and data; it is emptied first.
	Dir string
	// LogDir gets prometheus.log and alertmanager.log.
	LogDir string
	// Target is the host:port whose /metrics Prometheus scrapes, as job Job.
	Target string
	// Rules is a Prometheus rule file (groups:).
	Rules []byte
	// Interval is both the scrape and the rule evaluation interval.
	Interval time.Duration
}

// Job is the scrape job's name, the `job` label of every scraped series.
const Job = "exporterset-controller"

// Stack is a running Prometheus and Alertmanager.
type Stack struct {
	// Prometheus and Alertmanager are the base URLs of their HTTP APIs (loopback).
	Prometheus, Alertmanager string
	procs                    []*exec.Cmd
	client                   *http.Client
}

// Binaries finds Debian's prometheus and alertmanager (Debian names the latter
// prometheus-alertmanager).
func Binaries() (prometheus, alertmanager string, err error) {
	const hint = "run `make e2e`, which installs Debian's prometheus and prometheus-alertmanager"
	if prometheus, err = exec.LookPath("prometheus"); err != nil {
		return "", "", fmt.Errorf("prometheus: %w; %s", err, hint)
	}
	for _, name := range []string{"prometheus-alertmanager", "alertmanager"} {
		if alertmanager, err = exec.LookPath(name); err == nil {
			return prometheus, alertmanager, nil
		}
	}
	return "", "", fmt.Errorf("prometheus-alertmanager: %w; %s", err, hint)
}

// Start writes both configurations, starts Alertmanager then Prometheus on free loopback
// ports, and waits until both are ready.
func Start(ctx context.Context, opts Options) (*Stack, error) {
	promBin, amBin, err := Binaries()
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(opts.Dir); err != nil {
		return nil, err
	}
	for _, d := range []string{opts.Dir, opts.LogDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	amPort, err := testproc.FreePort()
	if err != nil {
		return nil, err
	}
	promPort, err := testproc.FreePort()
	if err != nil {
		return nil, err
	}
	in := func(name string) string { return filepath.Join(opts.Dir, name) }
	files := map[string]string{
		"alertmanager.yml": amConfig,
		"prometheus.yml":   promConfig(opts, in("rules.yml"), amPort),
		"rules.yml":        string(opts.Rules),
	}
	for name, content := range files {
		if err := os.WriteFile(in(name), []byte(content), 0o644); err != nil {
			return nil, err
		}
	}
	s := &Stack{
		Prometheus:   fmt.Sprintf("http://127.0.0.1:%d", promPort),
		Alertmanager: fmt.Sprintf("http://127.0.0.1:%d", amPort),
		// Loopback only: never through a proxy the environment names.
		client: &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 5 * time.Second},
	}
	am := []string{"--config.file=" + in("alertmanager.yml"), "--storage.path=" + in("alertmanager"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", amPort),
		"--cluster.listen-address=", // a single instance: no gossip port
	}
	prom := []string{"--config.file=" + in("prometheus.yml"), "--storage.tsdb.path=" + in("prometheus"),
		fmt.Sprintf("--web.listen-address=127.0.0.1:%d", promPort),
		// Firing alerts are sent again every second rather than every minute, so a
		// restarted Alertmanager or a dropped send is not what the test waits for.
		"--rules.alert.resend-delay=1s",
	}
	for _, p := range []struct {
		name, bin, url string
		args           []string
	}{
		{"alertmanager", amBin, s.Alertmanager, am},
		{"prometheus", promBin, s.Prometheus, prom},
	} {
		cmd, err := start(opts.LogDir, p.name, p.bin, p.args)
		if err != nil {
			s.Stop()
			return nil, err
		}
		s.procs = append(s.procs, cmd)
		if err := s.waitReady(ctx, p.url, 30*time.Second); err != nil {
			s.Stop()
			return nil, fmt.Errorf("%s (log %s): %w", p.name, filepath.Join(opts.LogDir, p.name+".log"), err)
		}
	}
	return s, nil
}

// amConfig routes every alert to a receiver that sends nothing: the test reads the alerts
// from Alertmanager's API. resolve_timeout only matters for alerts without an end, which
// Prometheus never sends; it is short so that nothing lingers either way.
const amConfig = `global:
  resolve_timeout: 5s
route:
  receiver: none
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
- name: none
`

func promConfig(opts Options, rules string, amPort int) string {
	iv := opts.Interval.String()
	return fmt.Sprintf(`global:
  scrape_interval: %[1]s
  scrape_timeout: %[1]s
  evaluation_interval: %[1]s
rule_files: [%[2]q]
alerting:
  alertmanagers:
  - static_configs:
    - targets: ["127.0.0.1:%[3]d"]
scrape_configs:
- job_name: %[4]s
  static_configs:
  - targets: [%[5]q]
`, iv, rules, amPort, Job, opts.Target)
}

// start runs bin in a process group of its own, its output in logDir/name.log.
func start(logDir, name, bin string, args []string) (*exec.Cmd, error) {
	f, err := os.OpenFile(filepath.Join(logDir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() { _ = cmd.Wait(); _ = f.Close() }()
	return cmd, nil
}

func (s *Stack) waitReady(ctx context.Context, base string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/-/ready", nil)
		if err != nil {
			return err
		}
		resp, err := s.client.Do(req)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("not ready after %s: %s", timeout, last)
}

// Stop ends both programs: SIGTERM to each process group, SIGKILL after 5 s.
func (s *Stack) Stop() {
	if s == nil {
		return
	}
	for i := len(s.procs) - 1; i >= 0; i-- {
		p := s.procs[i].Process
		_ = syscall.Kill(-p.Pid, syscall.SIGTERM)
		deadline := time.Now().Add(5 * time.Second)
		for time.Now().Before(deadline) && syscall.Kill(p.Pid, 0) == nil {
			time.Sleep(100 * time.Millisecond)
		}
		_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
	}
	s.procs = nil
}
