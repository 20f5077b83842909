// Command jumpstarter-exec is the e2e tier's stand-in for the launcher binary that the
// copy-jumpstarter-exec init container copies into /shared. The exporter only checks that
// it is there and executable; run, it asks the target runtime on $JUMPSTARTER_LAUNCHER_SOCKET
// a request (default STATUS; the arguments, joined, otherwise) and prints the reply, so that
// `kubectl exec POD -c exporter -- /shared/jumpstarter-exec` shows the launcher works.
package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/exporterset/exporterset/internal/testing/e2e/standin/launcher"
)

func main() {
	socket := os.Getenv(launcher.EnvSocket)
	if socket == "" {
		fmt.Fprintf(os.Stderr, "jumpstarter-exec: %s is not set\n", launcher.EnvSocket)
		os.Exit(2)
	}
	request := launcher.Status
	if len(os.Args) > 1 {
		request = strings.Join(os.Args[1:], " ")
	}
	reply, err := launcher.Ask(socket, request, 5*time.Second)
	if err != nil {
		fmt.Fprintf(os.Stderr, "jumpstarter-exec: %v\n", err)
		os.Exit(1)
	}
	fmt.Println(reply)
	if strings.HasPrefix(reply, "ERR") {
		os.Exit(1)
	}
}
