//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	jsv1 "github.com/exporterset/exporterset/api/jumpstarter/v1alpha1"
	"github.com/exporterset/exporterset/internal/testing/testproc"

	"github.com/exporterset/exporterset/internal/testing/e2e/core"
	"github.com/exporterset/exporterset/internal/testing/e2e/node"
	"github.com/exporterset/exporterset/internal/testing/testenv"
)

// upstreamParts finds upstream's core controller and its CRDs in ../shared.
func upstreamParts(root string) (bin, crds string, err error) {
	if bin, err = core.Binary(root); err != nil {
		return "", "", err
	}
	if crds, err = testenv.UpstreamCRDDir(); err != nil {
		return "", "", err
	}
	return bin, crds, nil
}

// startCore runs upstream's jumpstarter-controller for ns as the Jumpstarter core: a host
// process on the API server, its gRPC port dialled by the Pods at the bridge's host address
// with a certificate the tier made, whose CA becomes the namespace's
// jumpstarter-service-ca-cert (and so every exporter config's tls.ca). It skips the test
// where ../shared is absent.
func startCore(t *testing.T, ns string) *core.Core {
	t.Helper()
	if upstreamCore == "" {
		t.Skip("upstream's jumpstarter-controller and CRDs (../shared) are absent")
	}
	// The node's copy of the kubeconfig, under its state directory: the tier's teardown kills
	// every process whose command line names that directory, this one included.
	c, err := core.Start(ctx, env.Client, core.Options{Binary: upstreamCore, Kubeconfig: filepath.Join(node.DefaultStateDir, "kubeconfig"), Namespace: ns,
		Host: node.BridgeAddress, Bridge: node.BridgeName, Dir: filepath.Join(workDir, "core", ns)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			t.Logf("upstream's controller log: %s", c.Log)
		}
	})
	coreCA[ns] = string(c.CAPEM())
	setCA(t, ns, coreCA[ns])
	return c
}

// coreCA is the CA of the core started for each namespace (the scenarios run one at a time).
var coreCA = map[string]string{}

// logCore shows upstream's own log lines of exporters registering and leases assigned.
func logCore(t *testing.T, c *core.Core) {
	t.Helper()
	lines := c.Lines(`"Registering exporter"`, "Updating begin time for lease", "Lease marked for release", "exporter unregistered")
	if len(lines) == 0 {
		t.Errorf("upstream's controller logged no registration or lease (%s)", c.Log)
	}
	t.Logf("upstream's controller:\n  %s", strings.Join(lines, "\n  "))
}

// waitExporterStatus waits for an Exporter's status.exporterStatus.
func waitExporterStatus(t *testing.T, ns, name string, want jsv1.ExporterStatusValue) {
	t.Helper()
	testproc.WaitFor(t, time.Minute, fmt.Sprintf("Exporter %s to report %s", name, want), func() (bool, string) {
		var e jsv1.Exporter
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &e); err != nil {
			return false, err.Error()
		}
		return e.Status.ExporterStatusValue == want, fmt.Sprintf("exporterStatus %q (%s), conditions %+v", e.Status.ExporterStatusValue, e.Status.StatusMessage, e.Status.Conditions)
	})
}

// recordTransitions records the core's writes to ns's Exporters and Leases until the test
// ends.
func recordTransitions(t *testing.T, ns string) *core.Transitions {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	r, err := core.Record(rctx, wc, ns)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
