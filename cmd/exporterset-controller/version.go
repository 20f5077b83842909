package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/exporterset/exporterset/provisioner/plugin/host"
	"github.com/exporterset/exporterset/provisioners/baremetal"
	"github.com/exporterset/exporterset/provisioners/qemu"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3".
var version = "dev"

// revision is set at build time with -ldflags "-X main.revision=<git commit>"; the image build
// does, since Go records no VCS revision under -buildvcs=false or outside a git checkout.
var revision = ""

// commit is the VCS revision the binary was built from: revision, else what Go recorded.
func commit() string {
	if revision != "" {
		return revision
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				return s.Value
			}
		}
	}
	return "unknown"
}

func printVersion(w io.Writer) {
	fmt.Fprintf(w, "exporterset-controller %s\n", version)
	fmt.Fprintf(w, "commit: %s\n", commit())
	fmt.Fprintf(w, "go: %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(w, "plugin protocol versions: 1-%d\n", host.ProtocolVersion)
	fmt.Fprintf(w, "built-in provisioners: %s, %s\n", qemu.Name, baremetal.ProvisionerName)
}
