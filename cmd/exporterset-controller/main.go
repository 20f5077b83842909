// Command exporterset-controller runs the ExporterSet controller against a cluster. It is the
// binary the image ships; the local mode with an embedded control plane is the separate
// command exporterset-dev, so that no test machinery is linked in here.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/exporterset/exporterset/internal/controllerapp"
)

const usage = `exporterset-controller keeps warm pools of virtual Jumpstarter exporters.

Usage:
  exporterset-controller [run] [flags]   run against a cluster (kubeconfig or in-cluster)
  exporterset-controller version         print version, commit and protocol versions

Run "exporterset-controller run --help" for the flags.
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
	case "version":
		printVersion(os.Stdout)
	case "help", "-h", "--help":
		fmt.Print(usage)
	default:
		err = fmt.Errorf("unknown command %q\n\n%s", cmd, usage)
	}
	if err != nil {
		controllerapp.Exit("exporterset-controller", err)
	}
}

func runCommand(args []string) error {
	var f controllerapp.Flags
	fs := flag.NewFlagSet("exporterset-controller run", flag.ContinueOnError)
	f.Register(fs, true)
	if err := controllerapp.Parse(fs, args); err != nil {
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&f.Zap)))
	cfg, err := controllerapp.RestConfig(f.Kubeconfig())
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return controllerapp.Run(ctx, cfg, &f, version)
}
