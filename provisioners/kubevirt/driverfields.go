package kubevirt

// The upstream drivers' config fields this provisioner writes and checks, as their Python
// classes declare them (../shared/reference/upstream-drivers.md). The exporter passes an
// entry's config to the class as keyword arguments, so a key the class does not declare stops
// `jmp run` with a TypeError. The table follows the QEMU provisioner's: adding a driver is one
// driverSpecs line.

// TCPNetworkDriverType is upstream's TCP driver: the exporter's client connects through it to
// host:port, here the port-forward sidecar's local end of a guest port.
const TCPNetworkDriverType = "jumpstarter_driver_network.driver.TcpNetwork"

// kind is the JSON type a driver reads a config value as.
type kind int

const (
	kindString kind = iota // a str
	kindInt                // an int: a JSON integer, not a string of digits
	kindBool               // a bool
)

// fieldSpec is one config key of a driver.
type fieldSpec struct {
	name     string
	kind     kind
	required bool
	// lo and hi bound a kindInt when hi > 0.
	lo, hi int64
	// aliases are keys people write meaning this one, for did-you-mean.
	aliases []string
}

// driverSpec is a driver type the provisioner checks.
type driverSpec struct {
	typ    string
	fields []fieldSpec
}

// driverSpecs are the driver types the provisioner checks, the ones it writes.
var driverSpecs = []driverSpec{
	{typ: TCPNetworkDriverType, fields: []fieldSpec{
		{name: "host", kind: kindString, required: true, aliases: []string{"hostname", "address", "addr"}},
		{name: "port", kind: kindInt, required: true, lo: 1, hi: 65535, aliases: []string{"hostport", "localPort", "guestPort"}},
		{name: "enable_address", kind: kindBool},
	}},
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
