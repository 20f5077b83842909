package qemu

import (
	"math"
	"slices"
	"sort"
)

// The upstream drivers' config fields, as their Python classes declare them
// (../shared/reference/upstream-drivers.md). The exporter passes an entry's config to the
// class as keyword arguments, so a key the class does not declare stops `jmp run` with a
// TypeError, and a value of the wrong type fails later, often only when a lease powers the
// target on. Adding a driver is one driverSpecs line; adding a field, one line of its table.

// UnixNetworkDriverType is upstream's Unix socket driver, the TCP driver's sibling.
const UnixNetworkDriverType = "jumpstarter_driver_network.driver.UnixNetwork"

// kind is the JSON type a driver reads a config value as.
type kind int

const (
	kindString    kind = iota // a str
	kindInt                   // an int: a JSON integer, not a string of digits
	kindBool                  // a bool
	kindSize                  // a str in the QEMU driver's size syntax ("512M", "2G")
	kindStringMap             // an object of str values (default_partitions)
	kindObjectMap             // an object of objects, each checked against fieldSpec.entry
)

// span is an inclusive range of ints.
type span struct{ min, max int64 }

// portRange is a TCP port.
var portRange = &span{1, 65535}

// positive is any int above zero.
var positive = &span{1, math.MaxInt64}

// fieldSpec is one config key of a driver (or of a nested object such as a hostfwd entry).
type fieldSpec struct {
	name string
	kind kind
	// nullable: the driver takes null (Python None) as a value, its default.
	nullable bool
	// filled: EnrichDrivers sets the key when it is absent or null, so null is fine.
	filled bool
	// required: the driver has no default for it.
	required bool
	// rng bounds a kindInt; nil is any integer.
	rng *span
	// enum lists the accepted strings of a kindString; empty is any string.
	enum []string
	// aliases are keys people write meaning this one ("memory" for "mem"), for did-you-mean.
	aliases []string
	// entry are the fields of each value of a kindObjectMap.
	entry *objectSpec
	// check is a further check of a value of the right kind, e.g. a fixed path.
	check valueCheck
}

// objectSpec is a config object: what to call one and several in messages, and its fields.
type objectSpec struct {
	what, many string
	fields     []fieldSpec
}

// driverSpec is a driver type the provisioner checks.
type driverSpec struct {
	typ    string
	config *objectSpec
	// children returns the child drivers an entry with this (decoded, possibly empty) config
	// creates, which a ref "<entry>.<child>" may name; nil creates none.
	children func(cfg map[string]any) []string
}

// qemuConfig is jumpstarter_driver_qemu.driver.Qemu's keyword-only dataclass.
var qemuConfig = &objectSpec{what: QemuDriverType, fields: []fieldSpec{
	{name: "arch", kind: kindString, filled: true, check: checkArch},
	{name: "cpu", kind: kindString, nullable: true, aliases: []string{"cpu_model", "model"}},
	// QEMU refuses a zero topology, so at least 1; no upper bound: the arch's is QEMU's to say.
	{name: "smp", kind: kindInt, filled: true, rng: positive, aliases: []string{"cpus", "vcpus", "cores", "cpu_count"}},
	{name: "mem", kind: kindSize, filled: true, aliases: []string{"memory", "ram"}},
	{name: "disk_size", kind: kindSize, nullable: true, aliases: []string{"disk", "storage", "size"}},
	{name: "hostname", kind: kindString, aliases: []string{"host_name"}},
	{name: "username", kind: kindString, aliases: []string{"user"}},
	{name: "password", kind: kindString},
	{name: "default_partitions", kind: kindStringMap, aliases: []string{"partitions"}},
	{name: "hostfwd", kind: kindObjectMap, filled: true, entry: hostfwdEntry, aliases: []string{"forwards", "port_forwards", "ports"}},
	{name: "fls_version", kind: kindString, nullable: true},
	{name: "fls_custom_binary_url", kind: kindString, nullable: true},
	{name: "fls_allow_custom_binaries", kind: kindBool},
	// A zero or negative timeout would fail every flash at once.
	{name: "flash_timeout", kind: kindInt, rng: positive, aliases: []string{"timeout"}},
	{name: "launcher_socket", kind: kindString, nullable: true, filled: true, check: checkLauncherSocket},
}}

// hostfwdEntry is the driver's Hostfwd pydantic model, one per hostfwd key. Pydantic would
// drop an unknown key without a word; it is refused here all the same, since it is a
// forward that silently does not do what was written.
var hostfwdEntry = &objectSpec{what: "a hostfwd entry", many: "hostfwd entries", fields: []fieldSpec{
	{name: "protocol", kind: kindString, enum: []string{"tcp"}, aliases: []string{"proto"}},
	{name: "hostaddr", kind: kindString, aliases: []string{"host", "address", "addr"}},
	{name: "hostport", kind: kindInt, required: true, rng: portRange, aliases: []string{"port", "host_port"}},
	{name: "guestport", kind: kindInt, required: true, rng: portRange, aliases: []string{"guest", "guest_port"}},
}}

// tcpNetworkConfig is jumpstarter_driver_network.driver.TcpNetwork.
var tcpNetworkConfig = &objectSpec{what: TCPNetworkDriverType, fields: []fieldSpec{
	{name: "host", kind: kindString, required: true, aliases: []string{"hostname", "address", "addr", "hostaddr"}},
	{name: "port", kind: kindInt, required: true, rng: portRange, aliases: []string{"hostport"}},
	{name: "enable_address", kind: kindBool},
}}

// unixNetworkConfig is jumpstarter_driver_network.driver.UnixNetwork.
var unixNetworkConfig = &objectSpec{what: UnixNetworkDriverType, fields: []fieldSpec{
	{name: "path", kind: kindString, required: true, aliases: []string{"socket", "socket_path"}},
}}

// driverSpecs are the driver types the provisioner checks, the ones it claims.
var driverSpecs = []driverSpec{
	{typ: QemuDriverType, config: qemuConfig, children: qemuChildren},
	{typ: TCPNetworkDriverType, config: tcpNetworkConfig},
	{typ: UnixNetworkDriverType, config: unixNetworkConfig},
}

// qemuFixedChildren are the children every Qemu driver creates ("ssh" only where vsock is
// available, which cannot be known here, so a ref to it is let through).
var qemuFixedChildren = []string{"console", "flasher", "power", "ssh", "vnc"}

// qemuChildren are the fixed children plus one TcpNetwork per hostfwd entry, counting the
// ssh forward EnrichDrivers adds when the config sets no hostfwd.
func qemuChildren(cfg map[string]any) []string {
	children := slices.Clone(qemuFixedChildren)
	forwards, _ := cfg["hostfwd"].(map[string]any)
	for name := range forwards {
		if !slices.Contains(children, name) {
			children = append(children, name)
		}
	}
	sort.Strings(children)
	return children
}

// lookupDriver returns the spec of a driver type the provisioner checks, or nil.
func lookupDriver(typ string) *driverSpec {
	for i := range driverSpecs {
		if driverSpecs[i].typ == typ {
			return &driverSpecs[i]
		}
	}
	return nil
}

// DriverTypes are the driver types whose entries Validate checks against the upstream
// driver's fields; entries of other types pass through unchecked.
func DriverTypes() []string {
	types := make([]string, len(driverSpecs))
	for i, d := range driverSpecs {
		types[i] = d.typ
	}
	return types
}
