package host

import (
	"os/exec"
	"syscall"
)

// configureCmd makes the kernel SIGKILL the plugin when the controller dies without a chance
// to clean up (SIGKILL, OOM kill), so that a crashed controller leaves no orphan plugin. The
// signal follows the OS thread that started the child; Go keeps its threads for the life of
// the process unless a goroutine locked to one exits, which the controller does not do.
func configureCmd(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
