package core

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/internal/exportercfg"
	"github.com/exporterset/exporterset/internal/testing/testenv"
	"github.com/exporterset/exporterset/internal/testing/testproc"
)

// The stand-in exporter against upstream's core controller, both host processes on a test
// API server with upstream's CRDs: the credential and endpoint upstream issues make a config
// the stand-in connects with; Register and the Status stream make the Exporter Registered,
// Online and Available; upstream's scheduler assigns a Lease taken with a selector, the
// stand-in reports LeaseReady, and the lease's release makes it exit (exitOnLeaseEnd) after
// reporting Offline and unregistering.
func TestStandInAgainstUpstreamCore(t *testing.T) {
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := Binary(root)
	if err != nil {
		t.Skipf("needs ../shared: %v", err)
	}
	up, err := testenv.UpstreamCRDDir()
	if err != nil {
		t.Skipf("needs ../shared: %v", err)
	}
	env, err := testenv.Start(testenv.WithUpstreamJumpstarterCRDs(), testenv.WithCRDDirs(
		filepath.Join(up, "jumpstarter.dev_clients.yaml"), filepath.Join(up, "jumpstarter.dev_exporteraccesspolicies.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := t.Context()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	ns, err := env.CreateNamespace(ctx, "core")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Start(ctx, env.Client, Options{Binary: bin, Kubeconfig: kubeconfig, Namespace: ns, Host: "127.0.0.1", Dir: filepath.Join(dir, "core")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			b, _ := os.ReadFile(c.Log)
			t.Logf("jumpstarter-controller log:\n%s", b)
		}
	})

	ex := &jsv1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: "pool-abcde", Namespace: ns, Labels: map[string]string{"board": "x86-64-virtual"}},
		Spec: jsv1.ExporterSpec{Enabled: ptr.To(true)}}
	if err := env.Client.Create(ctx, ex); err != nil {
		t.Fatal(err)
	}
	get := func() *jsv1.Exporter {
		var e jsv1.Exporter
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ex), &e); err != nil {
			t.Fatal(err)
		}
		return &e
	}
	testproc.WaitFor(t, 30*time.Second, "a credential and endpoint", func() (bool, string) {
		e := get()
		return e.Status.Credential != nil && e.Status.Endpoint != "", fmt.Sprintf("%+v", e.Status)
	})
	e := get()
	if e.Status.Endpoint != c.Endpoint() {
		t.Errorf("status.endpoint %q, want %q", e.Status.Endpoint, c.Endpoint())
	}
	var sec corev1.Secret
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: e.Status.Credential.Name}, &sec); err != nil {
		t.Fatal(err)
	}
	cfg, err := exportercfg.Render(&exportercfg.Config{APIVersion: exportercfg.APIVersion, Kind: exportercfg.Kind,
		Metadata: exportercfg.Metadata{Namespace: ns, Name: ex.Name}, Endpoint: e.Status.Endpoint,
		TLS:   exportercfg.TLS{CA: base64.StdEncoding.EncodeToString(c.CAPEM())},
		Token: string(sec.Data["token"]), ExitOnLeaseEnd: true,
		Export: map[string]exportercfg.Driver{"qemu": {Type: "jumpstarter_driver_qemu.driver.Qemu"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	jmpBin := filepath.Join(dir, "jmp")
	if out, err := exec.Command("go", "build", "-o", jmpBin, "../standin/jmp").CombinedOutput(); err != nil {
		t.Fatalf("go build jmp: %v\n%s", err, out)
	}
	jmp := startJmp(t, jmpBin, cfgPath, filepath.Join(dir, "jmp.log"))

	cond := func(e *jsv1.Exporter, typ string) string {
		if c := apimeta.FindStatusCondition(e.Status.Conditions, typ); c != nil {
			return string(c.Status)
		}
		return ""
	}
	testproc.WaitFor(t, 30*time.Second, "Registered, Online, Available", func() (bool, string) {
		e := get()
		return cond(e, "Registered") == "True" && cond(e, "Online") == "True" && e.Status.ExporterStatusValue == jsv1.ExporterStatusAvailable,
			fmt.Sprintf("%+v", e.Status)
	})
	l := &jsv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l1", Namespace: ns},
		Spec: jsv1.LeaseSpec{ClientRef: corev1.LocalObjectReference{Name: "alice"},
			Selector: metav1.LabelSelector{MatchLabels: map[string]string{"board": "x86-64-virtual"}}, Duration: &metav1.Duration{Duration: 10 * time.Minute}}}
	if err := env.Client.Create(ctx, l); err != nil {
		t.Fatal(err)
	}
	testproc.WaitFor(t, 30*time.Second, "the lease assigned and LeaseReady", func() (bool, string) {
		e := get()
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(l), l); err != nil {
			t.Fatal(err)
		}
		return l.Status.ExporterRef != nil && l.Status.ExporterRef.Name == ex.Name && e.Status.ExporterStatusValue == jsv1.ExporterStatusLeaseReady,
			fmt.Sprintf("lease %+v; exporter %+v", l.Status, e.Status)
	})
	before := l.DeepCopy()
	l.Spec.Release = true
	if err := env.Client.Patch(ctx, l, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-jmp.done:
		if err != nil {
			t.Fatalf("jmp after the lease ended: %v\n%s", err, jmp.output())
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("jmp still running 30s after the release:\n%s", jmp.output())
	}
	for _, want := range []string{"lease l1 assigned (client alice)", "lease l1 ended", "unregistered: lease l1 ended (exitOnLeaseEnd)"} {
		if !strings.Contains(jmp.output(), want) {
			t.Errorf("jmp output lacks %q:\n%s", want, jmp.output())
		}
	}
	testproc.WaitFor(t, 30*time.Second, "Registered=False and Offline after Unregister", func() (bool, string) {
		e := get()
		return cond(e, "Registered") == "False" && e.Status.ExporterStatusValue == jsv1.ExporterStatusOffline, fmt.Sprintf("%+v", e.Status)
	})
	// Start returned once the core judged tokens: the exporter was never refused for an
	// authenticator still starting (the probe's own refusals are the only ones).
	if n := c.Count("authenticator not initialized"); n != c.ProbeRefusals {
		t.Errorf("the core refused %d calls \"authenticator not initialized\", the readiness probe %d: the exporter met a core that was not ready", n, c.ProbeRefusals)
	} else {
		t.Logf("the readiness probe waited through %d refusals \"authenticator not initialized\"; the exporter met none", n)
	}
	if lines := c.Lines("Registering exporter"); len(lines) == 0 {
		t.Errorf("upstream logged no \"Registering exporter\"")
	} else {
		t.Logf("upstream: %s", lines[0])
	}
}

// proc is the stand-in exporter run as a host process, its output in a file.
type proc struct {
	log  string
	done chan error
}

func startJmp(t *testing.T, bin, cfg, log string) *proc {
	t.Helper()
	f, err := os.Create(log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--exporter-config", cfg)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{log: log, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait(); f.Close() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		if t.Failed() {
			t.Logf("jmp:\n%s", p.output())
		}
	})
	return p
}

func (p *proc) output() string {
	b, _ := os.ReadFile(p.log)
	return string(b)
}
