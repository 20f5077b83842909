//go:build !linux

package host

import "os/exec"

// configureCmd does nothing outside Linux, which has no parent-death signal: there, plugins
// are cleaned up by Close only.
func configureCmd(*exec.Cmd) {}
