package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/internal/testing/e2e/core"
	"github.com/exporterset/exporterset/internal/testing/labhost"
	"github.com/exporterset/exporterset/internal/testing/testenv"
	"github.com/exporterset/exporterset/provisioners/baremetal"
)

// upstreamCoreEnv starts an API server of its own with upstream's four core CRDs, which
// upstream's controller needs (the package's env has the project's Exporter and Lease CRDs
// and no Client CRD, and upstream's controller does not start without it), as the e2e tier
// does; it skips the test where ../shared lacks the controller or the CRDs.
func upstreamCoreEnv(t *testing.T) (e *testenv.Env, coreBin string) {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	if coreBin, err = core.Binary(root); err != nil {
		t.Skip(err)
	}
	up, err := testenv.UpstreamCRDDir()
	if err != nil {
		t.Skip(err)
	}
	e, err = testenv.Start(testenv.WithUpstreamJumpstarterCRDs(), testenv.WithCRDDirs(
		filepath.Join(up, "jumpstarter.dev_clients.yaml"), filepath.Join(up, "jumpstarter.dev_exporteraccesspolicies.yaml")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Stop() })
	return e, coreBin
}

// buildJmp builds the stand-in exporter as a host binary into a directory of the test's,
// which the lab hosts see too (they share this machine's file system).
func buildJmp(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "jmp")
	cmd := exec.Command("go", "build", "-o", bin, "./internal/testing/e2e/standin/jmp")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building the stand-in jmp: %v\n%s", err, out)
	}
	return bin
}

// startLabCore runs upstream's controller for ns, serving the exporters at addr (the lab's
// service address), and publishes its CA as the namespace's jumpstarter-service-ca-cert.
// With iptables, the gRPC port (which upstream opens on every interface) admits only
// loopback and the lab hosts' links.
func startLabCore(t *testing.T, e *testenv.Env, bin, kc, ns, addr string) *core.Core {
	t.Helper()
	o := core.Options{Binary: bin, Kubeconfig: kc, Namespace: ns, Host: addr, Dir: filepath.Join(t.TempDir(), "core")}
	if _, err := exec.LookPath("iptables"); err == nil {
		o.Bridge = labhost.LinkPattern
	} else {
		t.Logf("no iptables here: upstream's gRPC port %d stays open on every interface for the test", core.GRPCPort)
	}
	c, err := core.Start(ctx, e.Client, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			t.Logf("upstream's controller log (%s), last lines:\n%s", c.Log, strings.Join(lastLines(c.Lines(""), 40), "\n"))
		}
	})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: exporterset.DefaultCAConfigMap, Namespace: ns},
		Data: map[string]string{exporterset.DefaultCAKey: string(c.CAPEM())}}
	if err := e.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	return c
}

func lastLines(l []string, n int) []string {
	if len(l) > n {
		return l[len(l)-n:]
	}
	return l
}

// labPool creates the credentials Secret, a class of the baremetal provisioner over the lab's
// hosts (QEMU with -machine none under TCG, the stand-in jmp as the exporter) and a set of
// it whose buffer is minAvail, in ns.
func labPool(t *testing.T, e *testenv.Env, ns string, lab *labhost.Lab, slots []int, qemu, jmp string, minAvail, maxR int32) *vtv1alpha1.ExporterSet {
	t.Helper()
	// The provisioner appends the config's path to jmp's command.
	params := lab.ClassParameters(t, slots, qemu, []string{jmp, "run", "--exporter-config"})
	labels := map[string]string{"board": "lab-realcore"}
	objs := []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "lab-ssh", Namespace: ns},
			Data: map[string][]byte{baremetal.SecretKeyPrivateKey: lab.ClientKey, baremetal.SecretKeyKnownHosts: lab.KnownHosts()}},
		&vtv1alpha1.VirtualTargetClass{ObjectMeta: metav1.ObjectMeta{Name: "lab", Namespace: ns},
			Spec: vtv1alpha1.VirtualTargetClassSpec{Provisioner: baremetal.ProvisionerName,
				CredentialsSecretRef: &corev1.LocalObjectReference{Name: "lab-ssh"}, Parameters: &apiextensionsv1.JSON{Raw: params}}},
		&vtv1alpha1.ExporterSet{ObjectMeta: metav1.ObjectMeta{Name: "lab", Namespace: ns},
			Spec: vtv1alpha1.ExporterSetSpec{VirtualTargetClassName: "lab", MinAvailableReplicas: minAvail, MaxReplicas: ptr.To(maxR),
				Selector: metav1.LabelSelector{MatchLabels: labels},
				Template: vtv1alpha1.ExporterTemplate{Metadata: vtv1alpha1.ExporterTemplateMetadata{Labels: labels}}}},
	}
	for _, o := range objs {
		if err := e.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	return objs[2].(*vtv1alpha1.ExporterSet)
}

// slotWatch samples the instance directories on every host every 100 ms for the whole test,
// keeping the most seen at once on each: the provisioner must never place more than slots.
type slotWatch struct {
	mu   sync.Mutex
	max  []int
	stop chan struct{}
	done chan struct{}
}

// watchSlots starts a slotWatch on lab, stopped at the end of the test.
func watchSlots(t *testing.T, lab *labhost.Lab) *slotWatch {
	w := &slotWatch{max: make([]int, len(lab.Hosts)), stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			for i := range lab.Hosts {
				n := len(lab.InstanceDirs(i))
				w.mu.Lock()
				w.max[i] = max(w.max[i], n)
				w.mu.Unlock()
			}
			select {
			case <-w.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(w.halt)
	return w
}

func (w *slotWatch) halt() {
	select {
	case <-w.stop:
	default:
		close(w.stop)
	}
	<-w.done
}

// most returns the most instances seen at once on each host so far.
func (w *slotWatch) most() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]int(nil), w.max...)
}

// labExporter is what the test reads of one of the set's Exporters.
type labExporter struct {
	name, host     string
	online, leased bool
	retiring       bool
}

// labExporters lists the set's Exporters in ns with their host, whether upstream's core has
// them Online, leased, and whether they are being removed or disabled (retiring).
func labExporters(t *testing.T, e *testenv.Env, ns string) []labExporter {
	t.Helper()
	var list jsv1.ExporterList
	if err := e.Client.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var out []labExporter
	for _, x := range list.Items {
		out = append(out, labExporter{
			name: x.Name, host: x.Annotations[baremetal.AnnotationHost],
			online:   apimeta.IsStatusConditionTrue(x.Status.Conditions, jsv1.ExporterConditionOnline),
			leased:   x.Status.LeaseRef != nil,
			retiring: x.DeletionTimestamp != nil || !x.IsEnabled(),
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// perHost counts the set's live (not retiring) Exporters on each host.
func perHost(xs []labExporter) map[string]int {
	m := map[string]int{}
	for _, x := range xs {
		if !x.retiring {
			m[x.host]++
		}
	}
	return m
}

func describeExporters(xs []labExporter) string {
	var b strings.Builder
	for _, x := range xs {
		fmt.Fprintf(&b, " %s@%s(online=%v leased=%v retiring=%v)", x.name, x.host, x.online, x.leased, x.retiring)
	}
	return b.String()
}

// labSetStatus reads the set.
func labSetStatus(t *testing.T, e *testenv.Env, ns string) *vtv1alpha1.ExporterSet {
	t.Helper()
	var s vtv1alpha1.ExporterSet
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "lab"}, &s); err != nil {
		t.Fatal(err)
	}
	return &s
}

// labProcesses lists the processes that run the stand-in exporter (their command line names
// jmp) or work in a lab directory (QEMU and the exporter run in their instance directory):
// none may outlive the test. The hosts' sshd, which works in /, goes with the lab.
func labProcesses(labDir, jmp string) []string {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var out []string
	for _, p := range procs {
		b, err := os.ReadFile(filepath.Join(p, "cmdline"))
		if err != nil {
			continue
		}
		cmd := strings.ReplaceAll(strings.TrimRight(string(b), "\x00"), "\x00", " ")
		cwd, _ := os.Readlink(filepath.Join(p, "cwd"))
		if strings.Contains(cmd, jmp) || strings.HasPrefix(cwd, labDir+"/") {
			out = append(out, fmt.Sprintf("%s (in %s): %s", filepath.Base(p), cwd, cmd))
		}
	}
	return out
}
