// Command pause is the e2e tier's sandbox (pause) image: it holds a Pod's namespaces, sleeps
// until SIGTERM or SIGINT and exits 0, and reaps the orphans it inherits as PID 1 of a Pod
// that shares its process namespace.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			return
		}
		for {
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
