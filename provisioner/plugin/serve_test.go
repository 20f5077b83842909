package plugin_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	hclog "github.com/hashicorp/go-hclog"

	"github.com/exporterset/exporterset/provisioner/plugin"
	"github.com/exporterset/exporterset/provisioner/plugin/host"
	"github.com/exporterset/exporterset/provisioner/plugin/internal/testprov"
	"github.com/exporterset/exporterset/provisioner/provisionertest"
)

// TestServeRefuses: Serve returns an error, rather than exiting the test process, when it has
// nothing to serve or no host to serve.
func TestServeRefuses(t *testing.T) {
	t.Setenv(plugin.EnvDebug, "")
	t.Setenv("EXPORTERSET_PROVISIONER_PLUGIN", "") // no host's magic cookie
	quiet := plugin.WithLogger(hclog.NewNullLogger())
	if err := plugin.Serve(nil, quiet); err == nil || !strings.Contains(err.Error(), "nil provisioner") {
		t.Errorf("Serve(nil) = %v, want an error naming the nil provisioner", err)
	}
	err := plugin.Serve(testprov.Provisioner{}, quiet)
	if err == nil || !strings.Contains(err.Error(), plugin.EnvDebug+"=1") {
		t.Errorf("Serve started by hand = %v, want an error saying how to run it by hand (%s=1)", err, plugin.EnvDebug)
	}
}

// TestServeWithDebug serves in process in debug mode, attaches the host to the line Serve
// prints, calls the provisioner through it, and ends Serve with the context.
func TestServeWithDebug(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	out, w := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- plugin.Serve(testprov.Provisioner{Names: []string{"debug.test.example.dev"}},
			plugin.WithDebug(ctx, w), plugin.WithLogger(hclog.NewNullLogger()))
		_ = w.Close()
	}()

	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), host.EnvReattach+"='"); ok {
				line <- strings.TrimSuffix(v, "'")
			}
		}
		close(line)
	}()
	var value string
	select {
	case value = <-line:
	case <-time.After(10 * time.Second):
		t.Fatal("Serve printed no reattach line within 10s")
	}
	var configs map[string]host.ReattachConfig
	if err := json.Unmarshal([]byte(value), &configs); err != nil || len(configs) != 1 {
		t.Fatalf("reattach line %q: %v", value, err)
	}
	for label, rc := range configs {
		if !rc.Test {
			t.Errorf("reattach config %+v: not marked Test, so a host would kill a plugin run by hand", rc)
		}
		p, err := host.Attach(ctx, label, rc, host.Options{Logger: provisionertest.Logger(t)})
		if err != nil {
			t.Fatal(err)
		}
		d, err := p.Describe(ctx)
		if err != nil || len(d.Names) != 1 || d.Names[0] != "debug.test.example.dev" {
			t.Errorf("Describe through the host = %+v, %v", d, err)
		}
		_ = p.Close()
	}

	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve ended by its context returned %v, want nil", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return within 10s of its context's end")
	}
}
