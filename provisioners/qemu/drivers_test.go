package qemu

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// driverLines writes drivers compactly for diffs: "name type|ref=... config".
func driverLines(drivers []vtv1alpha1.DriverSpec) []string {
	var lines []string
	for _, d := range drivers {
		line := d.Name + " "
		if d.Ref != "" {
			line += "ref=" + d.Ref
		} else {
			line += d.Type
		}
		if d.Config != nil {
			line += " " + string(d.Config.Raw)
		}
		lines = append(lines, line)
	}
	return lines
}

// Common pieces of the expected Qemu configs.
const (
	socket  = `"launcher_socket":"/shared/launcher.sock"`
	sshFwd  = `"hostfwd":{"ssh":{"guestport":22,"hostaddr":"127.0.0.1","hostport":2222,"protocol":"tcp"}}`
	ovmf    = `"default_partitions":{"OVMF_CODE.fd":"/usr/share/edk2/ovmf/OVMF_CODE.fd","OVMF_VARS.fd":"/usr/share/edk2/ovmf/OVMF_VARS.fd"}`
	aavmf   = `"default_partitions":{"OVMF_CODE.fd":"/usr/share/AAVMF/AAVMF_CODE.fd","OVMF_VARS.fd":"/usr/share/AAVMF/AAVMF_VARS.fd"}`
	sshTCP  = `ssh jumpstarter_driver_network.driver.TcpNetwork {"host":"127.0.0.1","port":2222}`
	defHost = `"hostname":"pool-abcde"`
)

func TestEnrichDrivers(t *testing.T) {
	tcp := vtv1alpha1.DriverSpec{Name: "tcp", Type: TCPNetworkDriverType, Config: &apiextensionsv1.JSON{Raw: []byte(`{"host":"127.0.0.1","port":5000}`)}}
	for _, tc := range []struct {
		name, params string
		drivers      []vtv1alpha1.DriverSpec
		exporter     string // "-" for no Exporter
		want         []string
	}{
		{name: "no drivers", want: nil},
		{name: "no Qemu driver: left alone, no TCP driver", drivers: []vtv1alpha1.DriverSpec{tcp}, want: []string{
			`tcp jumpstarter_driver_network.driver.TcpNetwork {"host":"127.0.0.1","port":5000}`}},
		{name: "defaults", drivers: []vtv1alpha1.DriverSpec{qemuDriver("")}, want: []string{
			`qemu jumpstarter_driver_qemu.driver.Qemu {"arch":"x86_64",` + ovmf + `,` + sshFwd + `,` + defHost + `,` + socket + `,"mem":"512M","smp":2}`,
			sshTCP}},
		{name: "parameters become driver keys, quantities QEMU sizes", params: `{"arch":"aarch64","resources":{"cpu":"4000m","memory":"1536Mi","storage":"10G"}}`,
			drivers: []vtv1alpha1.DriverSpec{qemuDriver(`{}`)}, want: []string{
				`qemu jumpstarter_driver_qemu.driver.Qemu {"arch":"aarch64",` + aavmf + `,"disk_size":"9765625K",` + sshFwd + `,` + defHost + `,` + socket + `,"mem":"1536M","smp":4}`,
				sshTCP}},
		{name: "explicit config wins, numbers exact", params: `{"arch":"aarch64","resources":{"cpu":4,"memory":"4Gi","storage":"20Gi"}}`,
			drivers: []vtv1alpha1.DriverSpec{qemuDriver(`{"arch":"x86_64","smp":9007199254740993,"mem":"3G","disk_size":"30G","hostname":"box","default_partitions":{},"hostfwd":{"ssh":{"hostport":2022,"guestport":22}},"launcher_socket":"/shared/launcher.sock","password":"p<&>"}`)},
			want: []string{
				`qemu jumpstarter_driver_qemu.driver.Qemu {"arch":"x86_64","default_partitions":{},"disk_size":"30G","hostfwd":{"ssh":{"guestport":22,"hostport":2022}},"hostname":"box",` + socket + `,"mem":"3G","password":"p<&>","smp":9007199254740993}`,
				`ssh jumpstarter_driver_network.driver.TcpNetwork {"host":"127.0.0.1","port":2022}`}},
		{name: "null is unset", drivers: []vtv1alpha1.DriverSpec{qemuDriver(`{"arch":null,"mem":null,"hostfwd":null,"launcher_socket":null}`)}, want: []string{
			`qemu jumpstarter_driver_qemu.driver.Qemu {"arch":"x86_64",` + ovmf + `,` + sshFwd + `,` + defHost + `,` + socket + `,"mem":"512M","smp":2}`,
			sshTCP}},
		{name: "the driver's arch picks the firmware", drivers: []vtv1alpha1.DriverSpec{qemuDriver(`{"arch":"aarch64"}`)}, want: []string{
			`qemu jumpstarter_driver_qemu.driver.Qemu {"arch":"aarch64",` + aavmf + `,` + sshFwd + `,` + defHost + `,` + socket + `,"mem":"512M","smp":2}`,
			sshTCP}},
		{name: "an arch without known firmware gets none", drivers: []vtv1alpha1.DriverSpec{qemuDriver(`{"arch":"riscv64"}`)}, want: []string{
			`qemu jumpstarter_driver_qemu.driver.Qemu {"arch":"riscv64",` + sshFwd + `,` + defHost + `,` + socket + `,"mem":"512M","smp":2}`,
			sshTCP}},
		{name: "bios: no UEFI partitions", params: `{"firmware":"bios"}`, drivers: []vtv1alpha1.DriverSpec{qemuDriver("")}, want: []string{
			`qemu jumpstarter_driver_qemu.driver.Qemu {"arch":"x86_64",` + sshFwd + `,` + defHost + `,` + socket + `,"mem":"512M","smp":2}`,
			sshTCP}},
		{name: "no Exporter: driver's hostname default", exporter: "-", drivers: []vtv1alpha1.DriverSpec{qemuDriver("")}, want: []string{
			`qemu jumpstarter_driver_qemu.driver.Qemu {"arch":"x86_64",` + ovmf + `,` + sshFwd + `,` + socket + `,"mem":"512M","smp":2}`,
			sshTCP}},
		{name: "exporter name not a hostname", exporter: "pool.v2", drivers: []vtv1alpha1.DriverSpec{qemuDriver("")}, want: []string{
			`qemu jumpstarter_driver_qemu.driver.Qemu {"arch":"x86_64",` + ovmf + `,` + sshFwd + `,` + socket + `,"mem":"512M","smp":2}`,
			sshTCP}},
		{name: "the set's TCP driver: none added", drivers: []vtv1alpha1.DriverSpec{tcp, qemuDriver("")}, want: []string{
			`tcp jumpstarter_driver_network.driver.TcpNetwork {"host":"127.0.0.1","port":5000}`,
			`qemu jumpstarter_driver_qemu.driver.Qemu {"arch":"x86_64",` + ovmf + `,` + sshFwd + `,` + defHost + `,` + socket + `,"mem":"512M","smp":2}`}},
		{name: "the name ssh taken: none added", drivers: []vtv1alpha1.DriverSpec{qemuDriver(""), {Name: "ssh", Ref: "qemu.ssh"}}, want: []string{
			`qemu jumpstarter_driver_qemu.driver.Qemu {"arch":"x86_64",` + ovmf + `,` + sshFwd + `,` + defHost + `,` + socket + `,"mem":"512M","smp":2}`,
			`ssh ref=qemu.ssh`}},
		{name: "TCP driver follows any forward to guest port 22", drivers: []vtv1alpha1.DriverSpec{qemuDriver(`{"hostfwd":{"web":{"hostport":8080,"guestport":80},"shell":{"hostaddr":"0.0.0.0","hostport":3022,"guestport":22}}}`)}, want: []string{
			`qemu jumpstarter_driver_qemu.driver.Qemu {"arch":"x86_64",` + ovmf + `,"hostfwd":{"shell":{"guestport":22,"hostaddr":"0.0.0.0","hostport":3022},"web":{"guestport":80,"hostport":8080}},` + defHost + `,` + socket + `,"mem":"512M","smp":2}`,
			`ssh jumpstarter_driver_network.driver.TcpNetwork {"host":"127.0.0.1","port":3022}`}},
		{name: "explicit hostfwd without ssh: no TCP driver", drivers: []vtv1alpha1.DriverSpec{qemuDriver(`{"hostfwd":{}}`)}, want: []string{
			`qemu jumpstarter_driver_qemu.driver.Qemu {"arch":"x86_64",` + ovmf + `,"hostfwd":{},` + defHost + `,` + socket + `,"mem":"512M","smp":2}`}},
		{name: "ref and other entries pass through in order", drivers: []vtv1alpha1.DriverSpec{{Name: "power", Ref: "qemu.power"}, qemuDriver(""), {Name: "x", Type: "my.Driver", Config: &apiextensionsv1.JSON{Raw: []byte(`{"a": 1.50}`)}}}, want: []string{
			`power ref=qemu.power`,
			`qemu jumpstarter_driver_qemu.driver.Qemu {"arch":"x86_64",` + ovmf + `,` + sshFwd + `,` + defHost + `,` + socket + `,"mem":"512M","smp":2}`,
			`x my.Driver {"a": 1.50}`,
			sshTCP}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := baseRequest(tc.params, tc.drivers...)
			switch tc.exporter {
			case "":
			case "-":
				req.Exporter = nil
			default:
				req.Exporter.Name = tc.exporter
			}
			before := snapshot(req)
			got, err := New().EnrichDrivers(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, driverLines(got)); diff != "" {
				t.Errorf("drivers (-want +got):\n%s", diff)
			}
			if !apiequality.Semantic.DeepEqual(before, snapshot(req)) {
				t.Error("the request was modified")
			}
		})
	}
}

// TestEnrichDriversReturnsANewSlice checks that changing the result leaves the set alone.
func TestEnrichDriversReturnsANewSlice(t *testing.T) {
	req := baseRequest(``, qemuDriver(`{"hostfwd":{"ssh":{"hostport":2022,"guestport":22}}}`))
	got, err := New().EnrichDrivers(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got[0].Name = "changed"
	got[0].Config.Raw[0] = ' '
	if d := req.Set.Spec.Template.Spec.Drivers[0]; d.Name != "qemu" || string(d.Config.Raw) != `{"hostfwd":{"ssh":{"hostport":2022,"guestport":22}}}` {
		t.Errorf("the set's driver changed: %+v", d)
	}
	if _, err := New().EnrichDrivers(context.Background(), &provisioner.Request{}); err != nil {
		t.Errorf("empty request: %v", err)
	}
}
