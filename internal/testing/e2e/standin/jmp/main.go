// Command jmp is the e2e tier's stand-in for Jumpstarter's `jmp`: the two subcommands the
// real-node tests need, with the real exporter's contract towards its controller.
//
//	jmp run --exporter-config PATH   check the config and the launcher, then be a client of
//	                                 the controller at the config's endpoint (TLS trusting
//	                                 tls.ca, the token as bearer): Register, ReportStatus,
//	                                 the Status stream; a lease's end exits with
//	                                 exitOnLeaseEnd, else it is available again; SIGTERM or
//	                                 SIGINT reports Offline and unregisters. The config's
//	                                 lease hooks run around each lease the Status stream
//	                                 announces, reported as upstream's exporter reports
//	                                 them (internal/testing/leasehook); a hook failing with
//	                                 onFailure exit ends it with Unregister and exit
//	                                 status 1, the failure as its termination message
//	jmp lease-ended [--pid N]        tell the exporter (PID 1 of its container) a lease ended,
//	                                 for a simulated core (jumpsim), which never dials
//
// A failure is one line on stderr and in the container's termination log, which the kubelet
// shows as the container status message, and exit status 1. A controller that cannot be
// reached (or a CA that verifies nobody) is no such failure: the exporter retries every
// second, as a real one does.
package main

import (
	"fmt"
	"os"

	"github.com/exporterset/exporterset/internal/testing/e2e/standin/termlog"
)

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	switch os.Args[1] {
	case "run":
		os.Exit(run(os.Args[2:]))
	case "lease-ended":
		os.Exit(leaseEnded(os.Args[2:]))
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: jmp run --exporter-config PATH | jmp lease-ended [--pid N]")
	os.Exit(2)
}

// fail reports why the exporter stops (stderr and the termination log) and returns 1.
func fail(format string, args ...any) int {
	return termlog.Fail(1, "jmp: ", fmt.Sprintf(format, args...))
}
