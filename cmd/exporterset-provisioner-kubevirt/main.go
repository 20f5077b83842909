// Command exporterset-provisioner-kubevirt serves the kubevirt.jumpstarter.dev provisioner
// (package provisioners/kubevirt) as an out-of-process plugin of the ExporterSet controller.
//
// The plugin protocol does not carry the ExternalProvisioner methods yet: until it does, a
// host that loads this binary sees a plain Provisioner (Validate, RenderPod, EnrichDrivers,
// Cleanup), and the VM lifecycle needs the provisioner embedded in the controller.
package main

import (
	"log"

	"github.com/exporterset/exporterset/provisioner/plugin"
	"github.com/exporterset/exporterset/provisioners/kubevirt"
)

func main() {
	if err := plugin.Serve(kubevirt.New()); err != nil {
		log.Fatal(err) // started by hand: the error says how to run it in debug mode
	}
}
