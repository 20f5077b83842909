// Command teardown removes what a real-node tier run left on the machine (daemons,
// containers, mounts, cgroups, the Pod bridge), for `make e2e` to run after the tests
// whatever became of them: a test binary killed by `go test -timeout` cleans nothing up.
package main

import (
	"fmt"
	"os"

	"github.com/exporterset/exporterset/internal/testing/e2e/core"
	"github.com/exporterset/exporterset/internal/testing/e2e/node"
)

func main() {
	state := node.DefaultStateDir
	if len(os.Args) > 1 {
		state = os.Args[1]
	}
	// Upstream's core controller names the state's kubeconfig, so Teardown kills it too.
	core.CloseFirewall(node.BridgeName)
	if err := node.Teardown(state); err != nil {
		fmt.Fprintf(os.Stderr, "teardown %s: %v\n", state, err)
		os.Exit(1)
	}
}
