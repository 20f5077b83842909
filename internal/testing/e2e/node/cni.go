package node

import (
	"fmt"
	"os"
	"path/filepath"
)

// cniBinDir is where Debian's containernetworking-plugins installs the plugins.
const cniBinDir = "/usr/lib/cni"

// BridgeName is the Linux bridge the Pods' network namespaces hang off. It exists only on
// this machine, and no route leads from it anywhere else (no masquerade, no default route
// for the Pods beyond the bridge).
const BridgeName = "e2e-cni0"

// PodSubnet is the Pods' address range on BridgeName.
const PodSubnet = "10.88.0.0/16"

// BridgeAddress is the host's own address on BridgeName (the range's gateway): what Pods
// reach a host process at, e.g. upstream's Jumpstarter controller. It exists once the first
// Pod's sandbox has made the bridge.
const BridgeAddress = "10.88.0.1"

// writeCNIConfig writes the bridge network containerd's CRI plugin sets Pods up with. The
// IPAM state lives under the state directory too. The bridge holds the gateway address, but
// Pods get no default route (isDefaultGateway is false): they reach only each other.
func writeCNIConfig(state string) error {
	dir := filepath.Join(state, "cni/net.d")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	conf := fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "e2e",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": %q,
        "ranges": [[{"subnet": %q, "gateway": %q}]]
      }
    }
  ]
}
`, BridgeName, filepath.Join(state, "cni/ipam"), PodSubnet, BridgeAddress)
	return os.WriteFile(filepath.Join(dir, "10-e2e.conflist"), []byte(conf), 0o644)
}
