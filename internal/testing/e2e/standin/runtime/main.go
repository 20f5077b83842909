// Command runtime is the e2e tier's stand-in for the QEMU target runtime, the native sidecar
// of the QEMU Pod: it serves the launcher socket ($JUMPSTARTER_LAUNCHER_SOCKET) with the
// launcher line protocol until SIGTERM or SIGINT.
//
//	--require-kvm   fail at start unless /dev/kvm opens read-write (the device the
//	                devices.kubevirt.io/kvm device plugin mounts)
//	--exit-code N   say so and exit N at once: the "crash" image, a runtime that cannot start
//
// A failure is one line on stderr and in the termination log, as for jmp.
package main

import (
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/exporterset/exporterset/internal/testing/e2e/standin/launcher"
	"github.com/exporterset/exporterset/internal/testing/e2e/standin/termlog"
)

// kvmDevice is where a KVM device (real, or the e2e plugin's stand-in) appears in a container.
const kvmDevice = "/dev/kvm"

func main() {
	requireKVM := flag.Bool("require-kvm", false, "fail unless "+kvmDevice+" opens read-write")
	exitCode := flag.Int("exit-code", -1, "exit with this status at once (the crash image)")
	flag.Parse()
	if *exitCode >= 0 {
		os.Exit(fail(*exitCode, "exiting with status %d as configured (--exit-code: the crash image)", *exitCode))
	}
	socket := os.Getenv(launcher.EnvSocket)
	if socket == "" {
		os.Exit(fail(1, "%s is not set: no launcher socket to serve", launcher.EnvSocket))
	}
	kvm := "no " + kvmDevice
	if f, err := os.OpenFile(kvmDevice, os.O_RDWR, 0); err == nil {
		f.Close()
		kvm = kvmDevice + " usable"
	} else if *requireKVM {
		os.Exit(fail(1, "KVM required (--require-kvm): %v (is a devices.kubevirt.io/kvm device allocated?)", err))
	}
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	ln, err := launcher.Listen(socket)
	if err != nil {
		os.Exit(fail(1, "launcher socket %s: %v", socket, err))
	}
	log.Printf("serving the launcher on %s (%s)", socket, kvm)
	done := make(chan error, 1)
	go func() {
		done <- launcher.Serve(ln, func(req string) string {
			log.Printf("request %q", req)
			switch req {
			case launcher.Ping:
				return "PONG qemu-runtime-standin"
			case launcher.Status:
				return "OK " + kvm
			}
			return "ERR unknown request " + strings.Fields(req + " ?")[0]
		})
	}()
	select {
	case sig := <-sigs:
		log.Printf("%v: stopping", sig)
		ln.Close() // removes the socket file
		<-done
	case err := <-done:
		if err != nil && !errors.Is(err, os.ErrClosed) {
			os.Exit(fail(1, "launcher socket %s: %v", socket, err))
		}
	}
}

func fail(code int, format string, args ...any) int {
	return termlog.Fail(code, "qemu-runtime: ", fmt.Sprintf(format, args...))
}
