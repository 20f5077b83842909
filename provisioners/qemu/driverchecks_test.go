package qemu

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// driver is a driver entry of type typ with the given JSON config ("" for none).
func driver(name, typ, config string) vtv1alpha1.DriverSpec {
	d := vtv1alpha1.DriverSpec{Name: name, Type: typ}
	if config != "" {
		d.Config = &apiextensionsv1.JSON{Raw: []byte(config)}
	}
	return d
}

// ref is a ref driver entry.
func ref(name, target string) vtv1alpha1.DriverSpec {
	return vtv1alpha1.DriverSpec{Name: name, Ref: target}
}

// driverMistake is a set template's drivers that upstream's exporter would refuse or run
// wrongly, with every message Validate must give.
type driverMistake struct {
	name    string
	drivers []vtv1alpha1.DriverSpec
	want    []string
}

// driverMistakes are the mistakes of issue 14 and their neighbours; the export-config test
// renders them too.
var driverMistakes = []driverMistake{
	{"Kubernetes quantities as sizes", []vtv1alpha1.DriverSpec{qemuDriver(`{"mem":"2Gi","disk_size":"20Gi"}`)}, []string{
		`spec.template.spec.drivers[0].config.mem: Invalid value: "2Gi": is not the driver's size syntax (a whole number and one of K, M, G, T, binary units): did you mean "2G"?`,
		`spec.template.spec.drivers[0].config.disk_size: Invalid value: "20Gi": is not the driver's size syntax (a whole number and one of K, M, G, T, binary units): did you mean "20G"?`,
	}},
	{"memory instead of mem", []vtv1alpha1.DriverSpec{qemuDriver(`{"memory":"2G"}`)}, []string{
		`spec.template.spec.drivers[0].config.memory: Unsupported value: "memory": not a field of jumpstarter_driver_qemu.driver.Qemu (did you mean "mem"?)`,
	}},
	{"smp as a word", []vtv1alpha1.DriverSpec{qemuDriver(`{"smp":"two"}`)}, []string{
		`spec.template.spec.drivers[0].config.smp: Invalid value: "two": must be an integer`,
	}},
	{"hostfwd over UDP", []vtv1alpha1.DriverSpec{qemuDriver(`{"hostfwd":{"dns":{"protocol":"udp","hostport":5353,"guestport":53}}}`)}, []string{
		`spec.template.spec.drivers[0].config.hostfwd[dns].protocol: Unsupported value: "udp": supported values: "tcp"`,
	}},
	{"hostfwd without hostport", []vtv1alpha1.DriverSpec{qemuDriver(`{"hostfwd":{"ssh":{"guestport":22}}}`)}, []string{
		`spec.template.spec.drivers[0].config.hostfwd[ssh].hostport: Required value: the driver has no default (an integer from 1 to 65535)`,
	}},
	{"TcpNetwork without port", []vtv1alpha1.DriverSpec{qemuDriver(""), driver("tcp", TCPNetworkDriverType, `{"host":"127.0.0.1"}`)}, []string{
		`spec.template.spec.drivers[1].config.port: Required value: the driver has no default (an integer from 1 to 65535)`,
	}},
	{"ref to a child the driver does not create", []vtv1alpha1.DriverSpec{qemuDriver(""), ref("power", "qemu.powr")}, []string{
		`spec.template.spec.drivers[1].ref: Not found: "qemu.powr": jumpstarter_driver_qemu.driver.Qemu "qemu" creates no child "powr" (did you mean "qemu.power"?); its children: "console", "flasher", "power", "ssh", "vnc"`,
	}},
	{"misspelt Qemu type", []vtv1alpha1.DriverSpec{driver("qemu", "jumpstarter_driver_qemu.driver.Qemuu", `{"mem":"2G"}`)}, []string{
		"spec.template.spec.drivers[0].type: Invalid value: \"jumpstarter_driver_qemu.driver.Qemuu\": is not a driver class: `jmp run` could not import it (did you mean \"jumpstarter_driver_qemu.driver.Qemu\"?)",
	}},
	// Neighbours.
	{"size with a space and a B", []vtv1alpha1.DriverSpec{qemuDriver(`{"mem":"2 GB","disk_size":"1.5Gi"}`)}, []string{
		`spec.template.spec.drivers[0].config.mem: Invalid value: "2 GB": is not the driver's size syntax (a whole number and one of K, M, G, T, binary units): did you mean "2G"?`,
		`spec.template.spec.drivers[0].config.disk_size: Invalid value: "1.5Gi": is not the driver's size syntax (a whole number and one of K, M, G, T, binary units): did you mean "1536M"?`,
	}},
	{"size as a number", []vtv1alpha1.DriverSpec{qemuDriver(`{"mem":2048}`)}, []string{
		`spec.template.spec.drivers[0].config.mem: Invalid value: 2048: must be a string in the driver's size syntax (a whole number and one of K, M, G, T, binary units), e.g. "512M" or "2G"`,
	}},
	{"zero size", []vtv1alpha1.DriverSpec{qemuDriver(`{"mem":"0M"}`)}, []string{
		`spec.template.spec.drivers[0].config.mem: Invalid value: "0M": must be more than zero`,
	}},
	{"smp as a string of digits", []vtv1alpha1.DriverSpec{qemuDriver(`{"smp":"4"}`)}, []string{
		`spec.template.spec.drivers[0].config.smp: Invalid value: "4": must be an integer, not a string (did you mean 4?)`,
	}},
	{"smp zero, fractional timeout", []vtv1alpha1.DriverSpec{qemuDriver(`{"smp":0,"flash_timeout":1.5}`)}, []string{
		`spec.template.spec.drivers[0].config.smp: Invalid value: 0: must be an integer of at least 1`,
		`spec.template.spec.drivers[0].config.flash_timeout: Invalid value: 1.5: must be an integer`,
	}},
	{"camel case and aliases", []vtv1alpha1.DriverSpec{qemuDriver(`{"diskSize":"20G","cpus":4,"user":"me","kernel":"/boot/vmlinuz"}`)}, []string{
		`spec.template.spec.drivers[0].config.cpus: Unsupported value: "cpus": not a field of jumpstarter_driver_qemu.driver.Qemu (did you mean "smp"?)`,
		`spec.template.spec.drivers[0].config.diskSize: Unsupported value: "diskSize": not a field of jumpstarter_driver_qemu.driver.Qemu (did you mean "disk_size"?)`,
		`spec.template.spec.drivers[0].config.kernel: Unsupported value: "kernel": not a field of jumpstarter_driver_qemu.driver.Qemu; its fields: "arch", "cpu", "smp", "mem", "disk_size", "hostname", "username", "password", "default_partitions", "hostfwd", "fls_version", "fls_custom_binary_url", "fls_allow_custom_binaries", "flash_timeout", "launcher_socket"`,
		`spec.template.spec.drivers[0].config.user: Unsupported value: "user": not a field of jumpstarter_driver_qemu.driver.Qemu (did you mean "username"?)`,
	}},
	{"wrong types", []vtv1alpha1.DriverSpec{qemuDriver(`{"hostname":7,"fls_allow_custom_binaries":"yes","default_partitions":{"root":1},"hostfwd":[]}`)}, []string{
		`spec.template.spec.drivers[0].config.hostname: Invalid value: 7: must be a string`,
		`spec.template.spec.drivers[0].config.default_partitions[root]: Invalid value: 1: must be a string`,
		`spec.template.spec.drivers[0].config.hostfwd: Invalid value: "array": must be an object of hostfwd entries by name`,
		`spec.template.spec.drivers[0].config.fls_allow_custom_binaries: Invalid value: "yes": must be true or false`,
	}},
	{"null where the driver has no null", []vtv1alpha1.DriverSpec{qemuDriver(`{"username":null,"cpu":null,"disk_size":null,"mem":null}`)}, []string{
		`spec.template.spec.drivers[0].config.username: Invalid value: null: must be a string; leave the key out for the driver's default`,
	}},
	{"hostfwd entry mistakes", []vtv1alpha1.DriverSpec{qemuDriver(`{"hostfwd":{"web":{"protocol":"TCP","host_port":8080,"guestport":70000},"x":"y"}}`)}, []string{
		`spec.template.spec.drivers[0].config.hostfwd[web].host_port: Unsupported value: "host_port": not a field of a hostfwd entry (did you mean "hostport"?)`,
		`spec.template.spec.drivers[0].config.hostfwd[web].protocol: Unsupported value: "TCP": supported values: "tcp" (did you mean "tcp"?)`,
		`spec.template.spec.drivers[0].config.hostfwd[web].hostport: Required value: the driver has no default (an integer from 1 to 65535)`,
		`spec.template.spec.drivers[0].config.hostfwd[web].guestport: Invalid value: 70000: must be an integer from 1 to 65535`,
		`spec.template.spec.drivers[0].config.hostfwd[x]: Invalid value: "y": must be an object (a hostfwd entry)`,
	}},
	{"Kubernetes arch name", []vtv1alpha1.DriverSpec{qemuDriver(`{"arch":"amd64"}`)}, []string{
		`spec.template.spec.drivers[0].config.arch: Invalid value: "amd64": names no QEMU system emulator (qemu-system-amd64) (did you mean "x86_64"?)`,
	}},
	{"TcpNetwork mistakes", []vtv1alpha1.DriverSpec{driver("tcp", TCPNetworkDriverType, `{"hostname":"h","port":"22","enable_address":1}`)}, []string{
		`spec.template.spec.drivers[0].config.hostname: Unsupported value: "hostname": not a field of jumpstarter_driver_network.driver.TcpNetwork (did you mean "host"?)`,
		`spec.template.spec.drivers[0].config.host: Required value: the driver has no default (a string)`,
		`spec.template.spec.drivers[0].config.port: Invalid value: "22": must be an integer, not a string (did you mean 22?)`,
		`spec.template.spec.drivers[0].config.enable_address: Invalid value: 1: must be true or false`,
	}},
	{"UnixNetwork without path", []vtv1alpha1.DriverSpec{driver("sock", UnixNetworkDriverType, `{}`)}, []string{
		`spec.template.spec.drivers[0].config.path: Required value: the driver has no default (a string)`,
	}},
	{"type in another case", []vtv1alpha1.DriverSpec{driver("tcp", "jumpstarter_driver_network.driver.TCPNetwork", `{}`)}, []string{
		"spec.template.spec.drivers[0].type: Invalid value: \"jumpstarter_driver_network.driver.TCPNetwork\": is not a driver class: `jmp run` could not import it (did you mean \"jumpstarter_driver_network.driver.TcpNetwork\"?)",
	}},
	{"module misspelt", []vtv1alpha1.DriverSpec{driver("tcp", "jumpstarter_driver_netwrok.driver.TcpNetwork", `{}`)}, []string{
		"spec.template.spec.drivers[0].type: Invalid value: \"jumpstarter_driver_netwrok.driver.TcpNetwork\": is not a driver class: `jmp run` could not import it (did you mean \"jumpstarter_driver_network.driver.TcpNetwork\"?)",
	}},
	{"ref to no driver", []vtv1alpha1.DriverSpec{qemuDriver(""), ref("power", "qemuu.power")}, []string{
		`spec.template.spec.drivers[1].ref: Not found: "qemuu.power": no driver named "qemuu" in spec.template.spec.drivers (did you mean "qemu"?)`,
	}},
	{"ref into a driver without children", []vtv1alpha1.DriverSpec{driver("tcp", TCPNetworkDriverType, `{"host":"h","port":22}`), ref("x", "tcp.power")}, []string{
		`spec.template.spec.drivers[1].ref: Not found: "tcp.power": jumpstarter_driver_network.driver.TcpNetwork "tcp" creates no child drivers`,
	}},
	{"ref to a forward that is not there", []vtv1alpha1.DriverSpec{qemuDriver(`{"hostfwd":{"web":{"hostport":8080,"guestport":80}}}`), ref("site", "qemu.wbe")}, []string{
		`spec.template.spec.drivers[1].ref: Not found: "qemu.wbe": jumpstarter_driver_qemu.driver.Qemu "qemu" creates no child "wbe" (did you mean "qemu.web"?); its children: "console", "flasher", "power", "ssh", "vnc", "web"`,
	}},
}

// TestValidateRejectsDriverMistakes pins every message: people read them in a condition.
// RenderPod and EnrichDrivers refuse the same input with the same error, so nothing renders.
func TestValidateRejectsDriverMistakes(t *testing.T) {
	ctx := context.Background()
	for _, tc := range driverMistakes {
		t.Run(tc.name, func(t *testing.T) {
			req := baseRequest(``, tc.drivers...)
			p := New()
			err := p.Validate(ctx, req)
			if diff := cmp.Diff(tc.want, fieldErrors(t, err)); diff != "" {
				t.Errorf("Validate errors (-want +got):\n%s", diff)
			}
			if _, perr := p.RenderPod(ctx, req); perr == nil || perr.Error() != err.Error() {
				t.Errorf("RenderPod error %v, want %v", perr, err)
			}
			if drivers, derr := p.EnrichDrivers(ctx, req); derr == nil || derr.Error() != err.Error() || drivers != nil {
				t.Errorf("EnrichDrivers gave %v and error %v, want nothing and %v", driverLines(drivers), derr, err)
			}
		})
	}
}

// TestValidateAcceptsDriverConfigs covers entries that look odd but are fine.
func TestValidateAcceptsDriverConfigs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		drivers []vtv1alpha1.DriverSpec
	}{
		{"every Qemu field", []vtv1alpha1.DriverSpec{qemuDriver(`{"arch":"x86_64","cpu":"max","smp":4,"mem":"2g","disk_size":"20G","hostname":"h","username":"u","password":"p",
			"default_partitions":{"root":"/disk/root.img"},"hostfwd":{"web":{"protocol":"tcp","hostaddr":"0.0.0.0","hostport":8080,"guestport":80}},
			"fls_version":"0.1","fls_custom_binary_url":null,"fls_allow_custom_binaries":true,"flash_timeout":600,"launcher_socket":"/shared/launcher.sock"}`)}},
		{"null where the driver or the provisioner fills it", []vtv1alpha1.DriverSpec{qemuDriver(`{"arch":null,"smp":null,"mem":null,"hostfwd":null,"cpu":null,"disk_size":null,"launcher_socket":null}`)}},
		{"config null", []vtv1alpha1.DriverSpec{qemuDriver(`null`)}},
		{"refs to fixed children, forwards and the added ssh driver", []vtv1alpha1.DriverSpec{
			qemuDriver(`{"hostfwd":{"web":{"hostport":8080,"guestport":80}}}`), ref("power", "qemu.power"), ref("site", "qemu.web"),
			ref("serial", "qemu.console.deeper"), ref("shell", "ssh")}},
		{"network drivers", []vtv1alpha1.DriverSpec{driver("tcp", TCPNetworkDriverType, `{"host":"127.0.0.1","port":5000,"enable_address":false}`),
			driver("sock", UnixNetworkDriverType, `{"path":"/shared/x.sock"}`)}},
		{"unknown types pass (warned about, not blocked)", []vtv1alpha1.DriverSpec{qemuDriver(""),
			driver("udp", "jumpstarter_driver_network.driver.UdpNetwork", `{"anything":1}`),
			driver("qp", "jumpstarter_driver_qemu.driver.QemuPower", ``),
			driver("mine", "example_drivers.Relay", `{"port":"x"}`), ref("relay", "mine.channel1")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := New().Validate(context.Background(), baseRequest(``, tc.drivers...)); err != nil {
				t.Errorf("Validate: %v", err)
			}
		})
	}
}

// TestWarnings pins the warning of each unknown upstream driver type, and that known types,
// typos (which are errors) and third-party packages get none.
func TestWarnings(t *testing.T) {
	drivers := []vtv1alpha1.DriverSpec{
		qemuDriver(""),
		driver("udp", "jumpstarter_driver_network.driver.UdpNetwork", ``),
		driver("tcp", TCPNetworkDriverType, `{"host":"h","port":1}`),
		driver("typo", "jumpstarter_driver_qemu.driver.Qemuu", ``),
		driver("mine", "example_drivers.Relay", ``),
		ref("power", "qemu.power"),
		driver("can", "jumpstarter_driver_can.driver.Can", ``),
	}
	got, err := New().Warnings(context.Background(), baseRequest(``, drivers...))
	if err != nil {
		t.Fatal(err)
	}
	want := []provisioner.Warning{
		{Field: "spec.template.spec.drivers[1].type", Message: `driver type "jumpstarter_driver_network.driver.UdpNetwork" is not one qemu.jumpstarter.dev checks: its config is passed on unchecked, and the exporter image must provide it (did you mean "jumpstarter_driver_network.driver.TcpNetwork"?)`},
		{Field: "spec.template.spec.drivers[6].type", Message: `driver type "jumpstarter_driver_can.driver.Can" is not one qemu.jumpstarter.dev checks: its config is passed on unchecked, and the exporter image must provide it`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if got, err := New().Warnings(context.Background(), nil); got != nil || err != nil {
		t.Errorf("nil request: %v, %v", got, err)
	}
}

// TestSuggestSize pins the driver spelling suggested for sizes people write.
func TestSuggestSize(t *testing.T) {
	for in, want := range map[string]string{
		"2Gi": "2G", "20Gi": "20G", "512Mi": "512M", "1.5Gi": "1536M", "2048Mi": "2G", "4096Ki": "4M",
		"2 GB": "2G", "2GiB": "2G", "2 G": "2G", "1073741824": "1G", "2 MiB": "2M",
		"2 GHz": "", "1000": "", "0Gi": "", "-1Gi": "", "lots": "", "1e1000000000": "", "2Ei": "",
	} {
		if got := suggestSize(in); got != want {
			t.Errorf("suggestSize(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestREADMEDocumentsEveryDriverField checks that the README's driver table names every
// checked type and field, so the table and driverfields.go cannot drift apart silently.
func TestREADMEDocumentsEveryDriverField(t *testing.T) {
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	start := strings.Index(readme, "## Driver checks")
	end := strings.Index(readme, "## Drivers\n")
	if start < 0 || end < start {
		t.Fatal(`README has no "## Driver checks" section before "## Drivers"`)
	}
	section := readme[start:end]
	objects := []*objectSpec{hostfwdEntry}
	for _, d := range driverSpecs {
		if !strings.Contains(section, "| `"+d.typ+"` |") {
			t.Errorf("README's driver table has no row for %s", d.typ)
		}
		objects = append(objects, d.config)
	}
	for _, o := range objects {
		for _, f := range o.fields {
			name := "`" + f.name + "`"
			if f.required {
				name = "**" + name + "**"
			}
			if !strings.Contains(section, name) {
				t.Errorf("README's driver table does not name %s's field %s", o.what, name)
			}
		}
	}
}
