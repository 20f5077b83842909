// Command exporterset-provisioner-container is a complete third-party provisioner plugin for
// the ExporterSet controller: it serves container.example.dev, whose instances are a Pod with
// the Jumpstarter exporter next to a target container running any image. See README.md.
package main

import (
	"log"

	"github.com/exporterset/exporterset/provisioner/plugin"
)

func main() {
	if err := plugin.Serve(Provisioner{}); err != nil {
		log.Fatal(err) // started by hand: the error says how to run it in debug mode
	}
}
