// Command exporterset-dev runs the ExporterSet controller on this machine, with an embedded
// kube-apiserver + etcd and a simulated Jumpstarter, so that a newcomer sees pools of virtual
// exporters work in one command (`make run`). It links test machinery (envtest, the
// simulator), which is why it is not the production command, exporterset-controller.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/exporterset/exporterset/internal/controllerapp"
	"github.com/exporterset/exporterset/internal/testing/testenv"
)

// version is what the controller logs and gives its provisioners here.
const version = "dev"

const usage = `exporterset-dev runs the ExporterSet controller locally: an embedded kube-apiserver + etcd,
a simulated Jumpstarter, the samples and a live view of the pools.

Usage:
  exporterset-dev [flags]                          start the environment (until Ctrl-C or --exit-after)
  exporterset-dev lease [--release NAME] [flags]   take (or release) a lease in the running environment

Run "exporterset-dev --help" or "exporterset-dev lease --help" for the flags.
`

func main() {
	args := os.Args[1:]
	var err error
	switch {
	case len(args) > 0 && args[0] == "lease":
		err = leaseCommand(args[1:])
	case len(args) > 0 && args[0] == "help":
		fmt.Print(usage)
	case len(args) > 0 && args[0] != "" && args[0][0] != '-':
		err = fmt.Errorf("unknown command %q\n\n%s", args[0], usage)
	default:
		err = devCommand(args)
	}
	if err != nil {
		controllerapp.Exit("exporterset-dev", err)
	}
}

// selfCommand is a command line that runs this program again with args, for the hints it
// prints. Under `go run` (as `make run` starts it) the binary sits in a temporary build
// directory that is gone once it exits, so the hint is `go run ./cmd/exporterset-dev`, with
// -C when the working directory is not the repository root; otherwise it is the path this
// process was started by.
func selfCommand(args ...string) string {
	prog := os.Args[0]
	if exe, err := os.Executable(); err == nil && underGoRun(exe) {
		prog = "go run ./cmd/exporterset-dev"
		if root, err := testenv.RepoRoot(); err == nil {
			if wd, err := os.Getwd(); err == nil && wd != root {
				prog = "go -C " + shellQuote(root) + " run ./cmd/exporterset-dev"
			}
		}
	}
	parts := []string{prog}
	for _, a := range args {
		parts = append(parts, shellQuote(a))
	}
	return strings.Join(parts, " ")
}

// underGoRun tells whether exe is a `go run` build: <tmp>/go-build<N>/b001/exe/<name>, or
// (Go 1.24 on) an executable kept in the build cache, <GOCACHE>/<xx>/<xx...>-d/<name>, which
// the cache may trim at any time.
func underGoRun(exe string) bool {
	dir := filepath.Dir(exe)
	if filepath.Base(dir) == "exe" && strings.HasPrefix(filepath.Base(filepath.Dir(filepath.Dir(dir))), "go-build") {
		return true
	}
	id, ok := strings.CutSuffix(filepath.Base(dir), "-d")
	shard := filepath.Base(filepath.Dir(dir))
	return ok && len(id) >= 32 && isHex(id) && len(shard) == 2 && isHex(shard) && strings.HasPrefix(id, shard)
}

func isHex(s string) bool {
	return strings.Trim(s, "0123456789abcdef") == ""
}

// stateDirArgs is the --state-dir a later command needs to find this environment: none for
// the default.
func stateDirArgs(dir string) []string {
	if dir == defaultStateDir() {
		return nil
	}
	return []string{"--state-dir", dir}
}

// shellQuote quotes s for a POSIX shell when it holds anything but safe characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:@,+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
