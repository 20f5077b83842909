// Package termlog writes a stand-in's last words where the kubelet reads a container's
// termination message, which becomes the container status's message.
package termlog

import (
	"fmt"
	"os"
	"strings"
)

// EnvPath overrides the termination log's path, for tests on a host.
const EnvPath = "STANDIN_TERMINATION_LOG"

// Path is the termination log: the default terminationMessagePath unless $STANDIN_TERMINATION_LOG.
func Path() string {
	if p := os.Getenv(EnvPath); p != "" {
		return p
	}
	return "/dev/termination-log"
}

// Fail prints msg, made one line, on stderr after prefix, writes it to the termination log
// when that exists (the kubelet creates it: never a stray file on a host), and returns code.
func Fail(code int, prefix, msg string) int {
	msg = strings.ReplaceAll(strings.TrimSpace(msg), "\n", " ")
	fmt.Fprintln(os.Stderr, prefix+msg)
	if f, err := os.OpenFile(Path(), os.O_WRONLY|os.O_TRUNC, 0); err == nil {
		fmt.Fprintln(f, msg)
		f.Close()
	}
	return code
}
