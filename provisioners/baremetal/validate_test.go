package baremetal

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/exporterset/exporterset/provisioner"
)

const goodHost = `{"name": "lab1", "address": "10.0.0.5", "arch": "x86_64", "slots": 2}`

func TestParseParametersDefaults(t *testing.T) {
	p, errs := ParseParameters([]byte(`{"hosts": [` + goodHost + `]}`))
	if len(errs) > 0 {
		t.Fatalf("unexpected errors: %v", errs)
	}
	want := &Parameters{
		Hosts:    []Host{{Name: "lab1", Address: "10.0.0.5", Port: 22, Arch: "x86_64", Slots: 2}},
		Exporter: ExporterSpec{Command: DefaultExporterCommand},
		User:     "root",
		Root:     "/var/lib/exporterset",
	}
	if d := cmp.Diff(want, p); d != "" {
		t.Fatalf("parameters (-want +got):\n%s", d)
	}
	if got := p.Runtime.BinaryFor("aarch64"); got != "qemu-system-aarch64" {
		t.Errorf("BinaryFor(aarch64) = %q", got)
	}
}

func TestParseParametersFull(t *testing.T) {
	raw := `{
		"hosts": [{"name": "a", "address": "lab-a.example", "port": 2222, "arch": "aarch64", "slots": 4}, ` + goodHost + `],
		"runtime": {"binary": "/opt/qemu/bin/qemu-system-aarch64", "kvm": true, "extraArgs": ["-m", "512", ""]},
		"exporter": {"command": ["/usr/local/bin/jmp", "run", "--exporter-config"]},
		"user": "lab", "root": "/srv/exporter set", "credentialsSecretRef": {"name": "lab-ssh"}
	}`
	p, errs := ParseParameters([]byte(raw))
	if len(errs) > 0 {
		t.Fatalf("unexpected errors: %v", errs)
	}
	if p.Hosts[0].Port != 2222 || p.Hosts[1].Port != 22 || !p.Runtime.KVM || p.User != "lab" ||
		p.Root != "/srv/exporter set" || p.CredentialsSecretRef == nil || p.CredentialsSecretRef.Name != "lab-ssh" ||
		len(p.Runtime.ExtraArgs) != 3 || p.Exporter.Command[0] != "/usr/local/bin/jmp" {
		t.Fatalf("unexpected parameters: %+v", p)
	}
	if got := p.Runtime.BinaryFor("x86_64"); got != "/opt/qemu/bin/qemu-system-aarch64" {
		t.Errorf("an explicit binary must win, got %q", got)
	}
	if h, ok := p.HostByName("a"); !ok || h.Address != "lab-a.example" {
		t.Errorf("HostByName(a) = %+v, %v", h, ok)
	}
}

func TestParseParametersErrors(t *testing.T) {
	host2 := func(extra string) string {
		return `{"hosts": [` + goodHost + `, {"name": "lab2", "address": "10.0.0.6", "arch": "x86_64", "slots": 1` + extra + `}]}`
	}
	for _, tc := range []struct {
		name, raw string
		// want are "field: detail fragment" pairs, all of which must be reported.
		want []string
	}{
		{"not an object", `[1]`, []string{"parameters: "}},
		{"no hosts", `{}`, []string{"parameters.hosts: Required value"}},
		{"empty hosts", `{"hosts": []}`, []string{"parameters.hosts: Required value"}},
		{"hosts not a list", `{"hosts": {"a": 1}}`, []string{"parameters.hosts: Invalid value"}},
		{"zero slots", host2(`, "slots": 0`), []string{"parameters.hosts[1].slots: Invalid value: 0: must be at least 1"}},
		{"slots string", `{"hosts": [{"name": "a", "address": "x", "arch": "x86_64", "slots": "2"}]}`, []string{"parameters.hosts[0].slots: Invalid value"}},
		{"missing host fields", `{"hosts": [{}]}`, []string{"parameters.hosts[0].name: Required", "parameters.hosts[0].address: Required", "parameters.hosts[0].arch: Required", "parameters.hosts[0].slots: Required"}},
		{"null host", `{"hosts": [null]}`, []string{"parameters.hosts[0]: Required"}},
		{"duplicate name", `{"hosts": [` + goodHost + `, {"name": "lab1", "address": "10.0.0.7", "arch": "x86_64", "slots": 1}]}`, []string{"parameters.hosts[1].name: Duplicate value"}},
		{"duplicate endpoint", `{"hosts": [` + goodHost + `, {"name": "lab9", "address": "10.0.0.5", "port": 22, "arch": "x86_64", "slots": 1}]}`, []string{"parameters.hosts[1].address: Duplicate value"}},
		{"bad name", `{"hosts": [{"name": "Lab_1", "address": "x", "arch": "x86_64", "slots": 1}]}`, []string{"parameters.hosts[0].name: Invalid value"}},
		{"address with port", host2(`, "address": "10.0.0.6:22"`), []string{"parameters.hosts[1].address: Invalid value"}},
		{"ipv6 address", host2(`, "address": "fd00::6"`), nil},
		{"address with space", host2(`, "address": "a b"`), []string{"parameters.hosts[1].address: Invalid value"}},
		{"address option", host2(`, "address": "-oProxyCommand=x"`), []string{"parameters.hosts[1].address: Invalid value"}},
		{"port range", host2(`, "port": 70000`), []string{"parameters.hosts[1].port: Invalid value: 70000: must be at most 65535"}},
		{"unknown arch", host2(`, "arch": "sparc"`), []string{"parameters.hosts[1].arch: Unsupported value: \"sparc\""}},
		{"unknown host key", host2(`, "ip": "1.2.3.4"`), []string{"parameters.hosts[1].ip: Unsupported value: \"ip\": unknown parameter (did you mean \"address\"?)"}},
		{"unknown top key", `{"hosts": [` + goodHost + `], "roots": "/x"}`, []string{"parameters.roots: Unsupported value: \"roots\": unknown parameter (did you mean \"root\"?)"}},
		{"no insecure option", `{"hosts": [` + goodHost + `], "insecure": true}`, []string{"parameters.insecure: Unsupported value"}},
		{"relative root", `{"hosts": [` + goodHost + `], "root": "var/lib/x"}`, []string{"parameters.root: Invalid value: \"var/lib/x\": must be an absolute path"}},
		{"unclean root", `{"hosts": [` + goodHost + `], "root": "/var/lib/../x"}`, []string{"parameters.root: Invalid value: \"/var/lib/../x\": must be a clean path"}},
		{"slash root", `{"hosts": [` + goodHost + `], "root": "/"}`, []string{"parameters.root: Invalid value: \"/\": must not be the file system root"}},
		{"bad user", `{"hosts": [` + goodHost + `], "user": "-oRoot"}`, []string{"parameters.user: Invalid value"}},
		{"runtime unknown key", `{"hosts": [` + goodHost + `], "runtime": {"kvm": true, "accel": "kvm"}}`, []string{"parameters.runtime.accel: Unsupported value"}},
		{"kvm not bool", `{"hosts": [` + goodHost + `], "runtime": {"kvm": "yes"}}`, []string{"parameters.runtime.kvm: Invalid value"}},
		{"extraArgs not strings", `{"hosts": [` + goodHost + `], "runtime": {"extraArgs": ["-m", 512]}}`, []string{"parameters.runtime.extraArgs[1]: Invalid value"}},
		{"extraArgs NUL", `{"hosts": [` + goodHost + `], "runtime": {"extraArgs": ["a\u0000b"]}}`, []string{"parameters.runtime.extraArgs[0]: Invalid value"}},
		{"empty binary", `{"hosts": [` + goodHost + `], "runtime": {"binary": ""}}`, []string{"parameters.runtime.binary: Invalid value"}},
		{"empty command", `{"hosts": [` + goodHost + `], "exporter": {"command": []}}`, []string{"parameters.exporter.command: Required value"}},
		{"empty command word", `{"hosts": [` + goodHost + `], "exporter": {"command": ["jmp", ""]}}`, []string{"parameters.exporter.command[1]: Invalid value"}},
		{"exporter unknown key", `{"hosts": [` + goodHost + `], "exporter": {"cmd": ["x"]}}`, []string{"parameters.exporter.cmd: Unsupported value"}},
		{"secret without name", `{"hosts": [` + goodHost + `], "credentialsSecretRef": {}}`, []string{"parameters.credentialsSecretRef.name: Required value"}},
		{"secret bad name", `{"hosts": [` + goodHost + `], "credentialsSecretRef": {"name": "A B"}}`, []string{"parameters.credentialsSecretRef.name: Invalid value"}},
		{"secret unknown key", `{"hosts": [` + goodHost + `], "credentialsSecretRef": {"name": "a", "namespace": "b"}}`, []string{"parameters.credentialsSecretRef.namespace: Unsupported value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, errs := ParseParameters([]byte(tc.raw))
			if len(tc.want) == 0 {
				if len(errs) > 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			if p != nil || len(errs) == 0 {
				t.Fatalf("want errors %q, got none (parameters %+v)", tc.want, p)
			}
			all := errs.ToAggregate().Error()
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("missing %q in:\n%s", w, all)
				}
			}
			if err := Validate([]byte(tc.raw)); !provisioner.IsInvalid(err) {
				t.Errorf("Validate = %v, want an Invalid error", err)
			}
		})
	}
}
