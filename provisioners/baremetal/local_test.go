package baremetal

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
)

// localRunner runs argv on this machine the way sshd does on a host: the QuoteArgv string
// handed to `sh -c`. It lets the host scripts be tested without SSH.
type localRunner struct{}

func (localRunner) Run(ctx context.Context, argv []string, stdin []byte) ([]byte, []byte, error) {
	cmd, err := QuoteArgv(argv)
	if err != nil {
		return nil, nil, err
	}
	c := exec.CommandContext(ctx, "sh", "-c", cmd)
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	if stdin != nil {
		c.Stdin = bytes.NewReader(stdin)
	}
	err = c.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.Bytes(), errOut.Bytes(), &CommandError{Host: "local", Command: argv[0], ExitStatus: exit.ExitCode(), Stderr: errOut.String()}
	}
	return out.Bytes(), errOut.Bytes(), err
}
