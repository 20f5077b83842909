// Command exporterset-controller runs the ExporterSet controller: against a cluster (`run`,
// the default), or on this machine with an embedded control plane and a simulated Jumpstarter
// (`dev`), so that a newcomer sees pools of virtual exporters work in one command.
package main

import (
	"fmt"
	"os"
)

const usage = `exporterset-controller keeps warm pools of virtual Jumpstarter exporters.

Usage:
  exporterset-controller [run] [flags]   run against a cluster (kubeconfig or in-cluster)
  exporterset-controller dev [flags]     run locally: embedded kube-apiserver + etcd, simulated Jumpstarter
  exporterset-controller dev lease [--release NAME] [flags]
                                         take (or release) a lease in a running dev environment
  exporterset-controller version         print version, commit and protocol versions

Run "exporterset-controller <command> --help" for the flags of a command.
`

func main() {
	args := os.Args[1:]
	cmd := "run"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	var err error
	switch cmd {
	case "run":
		err = runCommand(args)
	case "dev":
		if len(args) > 0 && args[0] == "lease" {
			err = devLeaseCommand(args[1:])
		} else {
			err = devCommand(args)
		}
	case "version":
		printVersion(os.Stdout)
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		err = fmt.Errorf("unknown command %q\n\n%s", cmd, usage)
	}
	if err != nil {
		if err != errHelp {
			fmt.Fprintf(os.Stderr, "exporterset-controller: %v\n", err)
		}
		os.Exit(exitCode(err))
	}
}
