package qemu

import (
	"bytes"
	"encoding/json"
	"maps"
	"sort"
	"strconv"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	vtv1alpha1 "github.com/exporterset/exporterset/api/v1alpha1"
	"github.com/exporterset/exporterset/provisioner"
)

// Driver types the provisioner knows.
const (
	// QemuDriverType is the upstream QEMU driver, whose entries EnrichDrivers fills in.
	QemuDriverType = "jumpstarter_driver_qemu.driver.Qemu"
	// TCPNetworkDriverType is upstream's TCP port driver, added for the guest's ssh forward.
	TCPNetworkDriverType = "jumpstarter_driver_network.driver.TcpNetwork"
	// SSHDriverName names the TCPNetworkDriverType entry EnrichDrivers adds.
	SSHDriverName = "ssh"
)

// The ssh forward added to a Qemu driver that has none: guest port 22 on the Pod's loopback,
// reachable from the exporter container (containers share the network namespace) and from
// nowhere else.
const (
	sshHostAddr  = "127.0.0.1"
	sshHostPort  = 2222
	sshGuestPort = 22
)

// enrichDrivers returns the set's drivers with the Qemu entry completed and, when useful,
// a TCP driver for its ssh forward. A top-level key the entry already sets is kept whole:
// nothing is merged into an explicit hostfwd or default_partitions.
func enrichDrivers(req *provisioner.Request, pl *plan) ([]vtv1alpha1.DriverSpec, error) {
	drivers := provisioner.TemplateDrivers(req)
	if pl.qemu < 0 {
		return drivers, nil
	}
	// A copy: pl.qemuConfig was decoded from the request and is shared with the plan. Only
	// top-level keys are added, so nested values may stay shared.
	cfg := maps.Clone(pl.qemuConfig)
	for k, v := range driverDefaults(req, pl) {
		if !explicit(cfg, k) {
			cfg[k] = v
		}
	}
	addFirmware(cfg, pl)
	host, port, forwarded := addSSHForward(cfg)

	raw, err := encodeJSON(cfg)
	if err != nil {
		return nil, provisioner.Errorf("qemu: encoding driver config: %w", err)
	}
	drivers[pl.qemu].Config = &apiextensionsv1.JSON{Raw: raw}

	if forwarded && !hasTCPDriverOrSSHName(drivers) {
		raw, err := encodeJSON(map[string]any{"host": host, "port": port})
		if err != nil {
			return nil, provisioner.Errorf("qemu: encoding driver config: %w", err)
		}
		drivers = append(drivers, vtv1alpha1.DriverSpec{
			Name: SSHDriverName, Type: TCPNetworkDriverType, Config: &apiextensionsv1.JSON{Raw: raw},
		})
	}
	return drivers, nil
}

// driverDefaults are the Qemu driver keys filled in from the parameters and the instance.
// disk_size only when resources.storage is given: without it the driver keeps the image's
// own size, and since it never shrinks a disk, a default size would stop larger images from
// booting.
func driverDefaults(req *provisioner.Request, pl *plan) map[string]any {
	p := pl.params
	d := map[string]any{
		"launcher_socket": LauncherSocketPath,
		"arch":            p.arch,
		"smp":             json.Number(strconv.FormatInt(p.cpus, 10)),
		"mem":             qemuSize(p.memory),
	}
	if p.storageSet {
		d["disk_size"] = qemuSize(p.storage)
	}
	// The exporter's name, unique in the namespace, tells instances apart in the guest
	// (cloud-init local-hostname) and in QMP logs; the driver's own default is "demo".
	if e := req.Exporter; e != nil && len(validation.IsDNS1123Label(e.Name)) == 0 {
		d["hostname"] = e.Name
	}
	return d
}

// addFirmware points the driver's OVMF_CODE.fd / OVMF_VARS.fd default partitions at the
// runtime image's EDK2 build for the guest arch, for UEFI firmware, unless the config sets
// default_partitions itself. With "bios" nothing is added and QEMU boots SeaBIOS.
func addFirmware(cfg map[string]any, pl *plan) {
	if pl.params.firmware != FirmwareUEFI || pl.arch == "" || explicit(cfg, "default_partitions") {
		return
	}
	spec := arches[pl.arch]
	cfg["default_partitions"] = map[string]any{"OVMF_CODE.fd": spec.uefiCode, "OVMF_VARS.fd": spec.uefiVars}
}

// addSSHForward adds the ssh host forward unless the config sets hostfwd itself, and
// returns where the guest's ssh is reachable: the forward named "ssh", else the first one to
// guest port 22.
func addSSHForward(cfg map[string]any) (host string, port json.Number, ok bool) {
	if !explicit(cfg, "hostfwd") {
		cfg["hostfwd"] = map[string]any{"ssh": map[string]any{
			"protocol": "tcp", "hostaddr": sshHostAddr,
			"hostport": json.Number(strconv.Itoa(sshHostPort)), "guestport": json.Number(strconv.Itoa(sshGuestPort)),
		}}
	}
	forwards, _ := cfg["hostfwd"].(map[string]any)
	name := "ssh"
	if _, named := forwards[name]; !named {
		name = findForward(forwards, "guestport", sshGuestPort)
	}
	fwd, _ := forwards[name].(map[string]any)
	if fwd == nil {
		return "", "", false
	}
	port, isNumber := fwd["hostport"].(json.Number)
	if n, err := strconv.Atoi(port.String()); !isNumber || err != nil || n < 1 || n > 65535 {
		return "", "", false
	}
	host, _ = fwd["hostaddr"].(string)
	if host == "" || host == "0.0.0.0" {
		host = sshHostAddr // the driver's default, and where a wildcard bind is reached
	}
	return host, port, true
}

// findForward returns the first forward (by name) whose key is the port number, or "".
func findForward(forwards map[string]any, key string, port int) string {
	names := make([]string, 0, len(forwards))
	for name := range forwards {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fwd, _ := forwards[name].(map[string]any)
		if n, ok := fwd[key].(json.Number); ok && n.String() == strconv.Itoa(port) {
			return name
		}
	}
	return ""
}

// hasTCPDriverOrSSHName reports whether the set already has a TCP driver (its own way to
// reach the guest) or a driver named SSHDriverName (which an added one would clash with).
func hasTCPDriverOrSSHName(drivers []vtv1alpha1.DriverSpec) bool {
	for _, d := range drivers {
		if d.Type == TCPNetworkDriverType || d.Name == SSHDriverName {
			return true
		}
	}
	return false
}

// explicit reports whether the config sets key to a value (null counts as unset).
func explicit(cfg map[string]any, key string) bool {
	v, ok := cfg[key]
	return ok && v != nil
}

// encodeJSON writes v compactly with sorted keys and exact numbers, without HTML escaping.
func encodeJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
