//go:build e2e

package e2e

import (
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/exporterset"
	"github.com/exporterset/exporterset/exporterset/pool"
	"github.com/exporterset/exporterset/internal/exportercfg"
	"github.com/exporterset/exporterset/internal/testing/e2e/core"
	"github.com/exporterset/exporterset/internal/testing/testproc"
)

// Issue 42 on upstream's real core: a physical board, played by the stand-in exporter run as
// a host process outside any set, serves the same Leases as a set whose hardware selector
// names it (minReplicas 0, minAvailableReplicas 1). ExporterAccessPolicies rank the board
// (priority 20) above the set's instances (10), and the board's name sorts after theirs, so
// only the policy can make the core pick it while a virtual instance is free too:
//   - the board free: the set is Available, counts it, and runs no Pod;
//   - the board leased: the set starts a virtual instance for its buffer (timed);
//   - the board released, the virtual instance still up (cooldown): the next Lease goes to
//     the board;
//   - all released: the set runs no Pod again after its cooldown.
func TestBoardFirstOnRealCore(t *testing.T) {
	deployController(t)
	ns := newNamespace(t, "board")
	c := startCore(t, ns)
	createClient(t, ns, "e2e") // with policies in the namespace, the core reads the lease's Client
	everyone := []jsv1.From{{}}
	for _, p := range []*jsv1.ExporterAccessPolicy{
		{ObjectMeta: metav1.ObjectMeta{Name: "boards-first", Namespace: ns}, Spec: jsv1.ExporterAccessPolicySpec{
			ExporterSelector: metav1.LabelSelector{MatchLabels: map[string]string{"lab/kind": "physical"}},
			Policies:         []jsv1.Policy{{Priority: 20, From: everyone}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "virtual-fallback", Namespace: ns}, Spec: jsv1.ExporterAccessPolicySpec{
			ExporterSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: pool.LabelSet, Operator: metav1.LabelSelectorOpExists}}},
			Policies:         []jsv1.Policy{{Priority: 10, From: everyone}}}},
	} {
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	const board = "zz-board" // sorts after every instance name (pool-...): name order would not pick it
	selector := map[string]string{"board": "hwlab"}
	startBoard(t, ns, board, map[string]string{"board": "hwlab", "lab/kind": "physical"}, c.CAPEM())
	waitExporterStatus(t, ns, board, jsv1.ExporterStatusAvailable)

	set := createPool(t, ns, "hwlab", func(s *vtv1alpha1.ExporterSet) {
		s.Annotations = map[string]string{exporterset.AnnotationHardwareSelector: "lab/kind=physical"}
		s.Spec.MinReplicas, s.Spec.MinAvailableReplicas, s.Spec.MaxReplicas = 0, 1, ptr.To[int32](2)
		s.Spec.ScaleDownCooldown = &metav1.Duration{Duration: 30 * time.Second}
	})
	boardCounted := func(what string, pods int) {
		t.Helper()
		testproc.WaitFor(t, 2*time.Minute, what, func() (bool, string) {
			s := getSet(t, ns, set.Name)
			a, lw := condition(s, string(vtv1alpha1.ConditionAvailable)), condition(s, string(vtv1alpha1.ConditionLeasesWait))
			n := len(setPods(t, ns, set.Name))
			return s.Status.HardwareAvailableReplicas == 1 && a.Status == metav1.ConditionTrue && n == pods,
				fmt.Sprintf("hardware %d, Available=%s %s: %s; LeasesWait: %s; %d Pods", s.Status.HardwareAvailableReplicas, a.Status, a.Reason, a.Message, lw.Message, n)
		})
	}
	boardCounted("the set Available on the free board, with no Pod", 0)
	if lw := condition(getSet(t, ns, set.Name), string(vtv1alpha1.ConditionLeasesWait)); strings.Contains(lw.Message, "boards first not assured") {
		t.Errorf("the policies rank the board first, yet LeasesWait says %q", lw.Message)
	}
	if n, _, desc := restState(t, ns, set.Name); n != 0 {
		t.Errorf("a Pod runs while the board is free: %s", desc)
	}

	first := takeLease(t, ns, selector)
	if got := first.Status.ExporterRef.Name; got != board {
		t.Fatalf("the first lease went to %s, want the free board %s", got, board)
	}
	taken := time.Now()
	waitAvailable(t, ns, set.Name)
	testproc.WaitFor(t, 3*time.Minute, "a virtual instance available with the board leased", func() (bool, string) {
		s := getSet(t, ns, set.Name)
		return s.Status.AvailableReplicas >= 1 && s.Status.HardwareAvailableReplicas == 0, fmt.Sprintf("available %d, hardware %d", s.Status.AvailableReplicas, s.Status.HardwareAvailableReplicas)
	})
	t.Logf("board leased -> a virtual instance available: %.2fs", time.Since(taken).Seconds())

	releaseLease(t, first)
	waitExporterStatus(t, ns, board, jsv1.ExporterStatusAvailable)
	if n := len(setPods(t, ns, set.Name)); n == 0 {
		t.Fatalf("the virtual instance is gone before the cooldown: the next lease would not show the policy at work")
	}
	second := takeLease(t, ns, selector)
	if got := second.Status.ExporterRef.Name; got != board {
		t.Errorf("with the board and a virtual instance both free, the lease went to %s, want the board %s (policy priority 20 over 10)", got, board)
	} else {
		t.Logf("board and virtual instance both free: the lease went to the board under its policy")
	}
	releaseLease(t, second)
	boardCounted("no Pod again once the cooldown is over", 0)
	logCore(t, c)
}

// createClient creates a Jumpstarter Client: upstream's core reads the Client a Lease names
// once a namespace has ExporterAccessPolicies.
func createClient(t *testing.T, ns, name string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("jumpstarter.dev/v1alpha1")
	u.SetKind("Client")
	u.SetNamespace(ns)
	u.SetName(name)
	if err := env.Client.Create(ctx, u); err != nil {
		t.Fatal(err)
	}
}

// startBoard creates an Exporter outside any set and connects the stand-in exporter to the
// core with the credential the core issues for it, as a lab's physical board runs its
// exporter on a host of its own. It keeps running across leases (exitOnLeaseEnd false).
func startBoard(t *testing.T, ns, name string, labels map[string]string, caPEM []byte) {
	t.Helper()
	ex := &jsv1.Exporter{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels}}
	if err := env.Client.Create(ctx, ex); err != nil {
		t.Fatal(err)
	}
	testproc.WaitFor(t, time.Minute, "the board's credential and endpoint", func() (bool, string) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ex), ex); err != nil {
			return false, err.Error()
		}
		return ex.Status.Credential != nil && ex.Status.Endpoint != "", fmt.Sprintf("%+v", ex.Status)
	})
	var sec corev1.Secret
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ex.Status.Credential.Name}, &sec); err != nil {
		t.Fatal(err)
	}
	// The board's exporter runs on this host, so it dials the core on loopback (the serving
	// certificate names 127.0.0.1 too). From this host, a connection to the bridge address
	// the core issued (status.endpoint, for Pods) was once taken by the machine's transparent
	// egress proxy, which answered with a certificate of its own; what the bridge address
	// serves here is logged.
	hostEndpoint := fmt.Sprintf("127.0.0.1:%d", core.GRPCPort)
	t.Logf("status.endpoint %s, dialled from this host: %s", ex.Status.Endpoint, servedCert(ex.Status.Endpoint))
	cfg, err := exportercfg.Render(&exportercfg.Config{APIVersion: exportercfg.APIVersion, Kind: exportercfg.Kind,
		Metadata: exportercfg.Metadata{Namespace: ns, Name: name}, Endpoint: hostEndpoint,
		TLS:    exportercfg.TLS{CA: base64.StdEncoding.EncodeToString(caPEM)},
		Token:  string(sec.Data["token"]),
		Export: map[string]exportercfg.Driver{"power": {Type: "jumpstarter_driver_power.driver.MockPower"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(workDir, "boards", ns)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfgPath, bin, logPath := filepath.Join(dir, name+".yaml"), filepath.Join(dir, "jmp"), filepath.Join(dir, name+".log")
	if err := os.WriteFile(cfgPath, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("go", "build", "-o", bin, "./standin/jmp").CombinedOutput(); err != nil {
		t.Fatalf("go build jmp: %v\n%s", err, out)
	}
	f, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", "--exporter-config", cfgPath)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = f.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("board %s's exporter:\n%s", name, b)
		}
	})
	testproc.WaitFor(t, time.Minute, "the board Registered and Online", func() (bool, string) {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ex), ex); err != nil {
			return false, err.Error()
		}
		return apimeta.IsStatusConditionTrue(ex.Status.Conditions, jsv1.ExporterConditionRegistered) &&
			apimeta.IsStatusConditionTrue(ex.Status.Conditions, jsv1.ExporterConditionOnline), fmt.Sprintf("%+v", ex.Status.Conditions)
	})
}

// servedCert describes the certificate addr serves to a TLS client that verifies nothing (a
// diagnostic line).
func servedCert(addr string) string {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}) //nolint:gosec // only read
	if err != nil {
		return err.Error()
	}
	defer conn.Close()
	certs := conn.ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return "no certificate"
	}
	c := certs[0]
	return fmt.Sprintf("subject %q, issuer %q, DNS %v, IPs %v", c.Subject.String(), c.Issuer.String(), c.DNSNames, c.IPAddresses)
}
