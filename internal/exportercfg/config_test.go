package exportercfg

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var goodCA = base64.StdEncoding.EncodeToString([]byte("-----BEGIN CERTIFICATE-----\ntest\n-----END CERTIFICATE-----\n"))

// good is a config as the controller renders it; each case below edits one line of it.
var good = `apiVersion: jumpstarter.dev/v1alpha1
kind: ExporterConfig
metadata:
  name: pool-7kq2p
  namespace: lab
endpoint: grpc.jumpstarter.example:443
tls:
  ca: ` + goodCA + `
  insecure: false
token: abc.def
exitOnLeaseEnd: true
export:
  qemu:
    type: jumpstarter_driver_qemu.driver.Qemu
    config:
      arch: x86_64
  power:
    ref: qemu.power
`

func TestParseGood(t *testing.T) {
	cfg, err := Parse([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Check(); err != nil {
		t.Fatalf("Check: %v", err)
	}
	if !cfg.ExitOnLeaseEnd || cfg.Metadata.Name != "pool-7kq2p" || cfg.Token != "abc.def" {
		t.Errorf("parsed %+v", cfg)
	}
	if diff := cmp.Diff([]string{"power", "qemu"}, cfg.DriverNames()); diff != "" {
		t.Errorf("DriverNames (-want +got):\n%s", diff)
	}
	if q := cfg.Export["qemu"]; q.Type != "jumpstarter_driver_qemu.driver.Qemu" || string(q.Config) != `{"arch":"x86_64"}` {
		t.Errorf("qemu entry %+v (config %s)", q, q.Config)
	}
	if p := cfg.Export["power"]; p.Ref != "qemu.power" || p.Type != "" {
		t.Errorf("power entry %+v", p)
	}
}

// edit replaces the first line of good starting with old (after indentation) by repl.
func edit(t *testing.T, old, repl string) string {
	t.Helper()
	lines := strings.Split(good, "\n")
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), old) {
			indent := l[:len(l)-len(strings.TrimLeft(l, " "))]
			if repl == "" {
				return strings.Join(append(lines[:i:i], lines[i+1:]...), "\n")
			}
			lines[i] = indent + repl
			return strings.Join(lines, "\n")
		}
	}
	t.Fatalf("no line %q in the good config", old)
	return ""
}

func TestCheckBadConfigs(t *testing.T) {
	for _, tc := range []struct {
		name, old, repl, want string
	}{
		{"api version", "apiVersion:", "apiVersion: v1", `apiVersion is "v1", want "jumpstarter.dev/v1alpha1"`},
		{"kind", "kind:", "kind: Exporter", `kind is "Exporter", want "ExporterConfig"`},
		{"no name", "name: pool", "", "metadata.name is empty"},
		{"no namespace", "namespace:", "", "metadata.namespace is empty"},
		{"no endpoint", "endpoint:", "", "endpoint is empty: no controller to connect to"},
		{"endpoint without port", "endpoint:", "endpoint: grpc.example", `endpoint "grpc.example" is not host:port: address grpc.example: missing port in address`},
		{"endpoint without host", "endpoint:", "endpoint: :443", `endpoint ":443" has no host`},
		{"endpoint bad port", "endpoint:", "endpoint: grpc.example:https", `endpoint "grpc.example:https": port "https" is not a number from 1 to 65535`},
		{"no token", "token:", "", "token is empty: the exporter cannot authenticate"},
		{"ca not base64", "ca:", "ca: '-----BEGIN'", "tls.ca is not base64: illegal base64 data at input byte 0"},
		{"no ca", "ca:", "", "tls.ca is empty and tls.insecure is false: no CA to verify the controller's certificate"},
		{"ca without certificate", "ca:", "ca: " + base64.StdEncoding.EncodeToString([]byte("hello")), "tls.ca holds no PEM certificate"},
		{"type and ref", "ref: qemu.power", "ref: qemu.power\n    type: x.Y", `export["power"]: has ref and type: want type and config, or ref alone`},
		{"stray field", "ref: qemu.power", "reference: qemu.power", `export["power"]: unknown field "reference" (want type and config, or ref)`},
		{"config without type", "type: jumpstarter_driver_qemu", "", `export["qemu"]: has no type (and no ref)`},
		{"empty type", "type: jumpstarter_driver_qemu", "type: ''", `export["qemu"]: type is empty`},
		{"empty ref", "ref: qemu.power", "ref: ''", `export["power"]: ref is empty`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse([]byte(edit(t, tc.old, tc.repl)))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			err = cfg.Check()
			if err == nil || err.Error() != tc.want {
				t.Errorf("Check = %v\nwant   %s", err, tc.want)
			}
		})
	}
}

// A config without drivers is one upstream's exporter accepts: the embedded example and any
// set without drivers write one.
func TestCheckNoExport(t *testing.T) {
	for _, tail := range []string{"export: {}\n", "export:\n", ""} {
		cfg, err := Parse([]byte(good[:strings.Index(good, "export:")] + tail))
		if err != nil {
			t.Fatal(err)
		}
		if err := cfg.Check(); err != nil {
			t.Errorf("%q: Check = %v, want nil (upstream's exporter runs with no drivers)", tail, err)
		}
		if len(cfg.DriverNames()) != 0 {
			t.Errorf("%q: drivers %v", tail, cfg.DriverNames())
		}
	}
}

func TestCheckInsecureNeedsNoCA(t *testing.T) {
	cfg, err := Parse([]byte(edit(t, "ca:", "")))
	if err != nil {
		t.Fatal(err)
	}
	cfg.TLS.Insecure = true
	if err := cfg.Check(); err != nil {
		t.Errorf("Check with tls.insecure and no CA: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"not yaml", "apiVersion: [", "not a YAML ExporterConfig: "},
		{"token not a string", strings.Replace(good, "token: abc.def", "token: {a: 1}", 1), "not a YAML ExporterConfig: "},
		{"entry not a map", strings.Replace(good, "    ref: qemu.power", "    - qemu.power", 1), `export["power"]: not a map of type/config or ref: `},
		{"type not a string", strings.Replace(good, "type: jumpstarter_driver_qemu.driver.Qemu", "type: [a]", 1), `export["qemu"]: type: `},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("Parse = %v, want an error starting %q", err, tc.want)
			}
		})
	}
	// An empty file parses; Check names the first missing field.
	cfg, err := Parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Check(); err == nil || !strings.HasPrefix(err.Error(), "apiVersion is \"\"") {
		t.Errorf("Check of an empty file = %v", err)
	}
}
