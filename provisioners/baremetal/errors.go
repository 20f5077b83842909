package baremetal

import (
	"errors"
	"fmt"
	"strings"
)

// UnreachableError: the host could not be reached or stopped talking SSH (dial refused or
// timed out, connection dropped during the handshake or a command). It is transient: the
// reconciler retries and Place skips the host meanwhile.
type UnreachableError struct {
	// Host is the host's name, Address what was dialled (host:port).
	Host, Address string
	// Err is the cause.
	Err error
}

// Error names the host and quotes the cause.
func (e *UnreachableError) Error() string {
	return fmt.Sprintf("lab host %q (%s) is unreachable: %v", e.Host, e.Address, e.Err)
}

// Unwrap returns the cause.
func (e *UnreachableError) Unwrap() error { return e.Err }

// AuthError: the host refused the client key for the user. A person must fix the
// credentials Secret or the host's authorized_keys; retrying does not help.
type AuthError struct {
	// Host is the host's name, Address what was dialled, User the SSH user.
	Host, Address, User string
	// Err is the cause.
	Err error
}

// Error names the host and user and quotes the cause.
func (e *AuthError) Error() string {
	return fmt.Sprintf("lab host %q (%s) refused authentication as %q: %v", e.Host, e.Address, e.User, e.Err)
}

// Unwrap returns the cause.
func (e *AuthError) Unwrap() error { return e.Err }

// HostKeyProblem says what is wrong with a host key.
type HostKeyProblem string

const (
	// HostKeyUnknown: known_hosts has no key for the host.
	HostKeyUnknown HostKeyProblem = "unknown"
	// HostKeyMismatch: known_hosts has keys for the host, none the one it presented: the
	// host was reinstalled, or something is in the middle.
	HostKeyMismatch HostKeyProblem = "mismatch"
	// HostKeyRevoked: the presented key is marked @revoked.
	HostKeyRevoked HostKeyProblem = "revoked"
)

// HostKeyError: the host's key could not be verified against known_hosts, so the connection
// was closed before authenticating. There is deliberately no option to skip this check.
type HostKeyError struct {
	// Host is the host's name, Address what was dialled.
	Host, Address string
	// Problem says what is wrong.
	Problem HostKeyProblem
	// Got is the SHA256 fingerprint of the key the host presented; Want those known_hosts
	// lists for it (empty unless Problem is HostKeyMismatch).
	Got  string
	Want []string
}

// Error names the host and the fingerprints.
func (e *HostKeyError) Error() string {
	switch e.Problem {
	case HostKeyMismatch:
		return fmt.Sprintf("lab host %q (%s) host key mismatch: it presented %s, known_hosts has %s", e.Host, e.Address, e.Got, strings.Join(e.Want, ", "))
	case HostKeyRevoked:
		return fmt.Sprintf("lab host %q (%s) presented a revoked host key %s", e.Host, e.Address, e.Got)
	default:
		return fmt.Sprintf("lab host %q (%s) host key unknown: known_hosts has no key for it (it presented %s)", e.Host, e.Address, e.Got)
	}
}

// CommandError: a remote command ran and exited non-zero.
type CommandError struct {
	// Host is the host's name.
	Host string
	// Command is the remote program (argv[0]), or the name of one of this package's scripts.
	Command string
	// ExitStatus is the remote exit status.
	ExitStatus int
	// Stderr is the end of the command's standard error, quoted in the message.
	Stderr string
}

// Error names the host and command and quotes stderr.
func (e *CommandError) Error() string {
	msg := fmt.Sprintf("lab host %q: %s exited with status %d", e.Host, e.Command, e.ExitStatus)
	if s := strings.TrimSpace(e.Stderr); s != "" {
		msg += ": " + fmt.Sprintf("%q", tail(s, 512))
	}
	return msg
}

// tail returns at most the last n bytes of s, so a chatty failure does not flood a condition.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// isRefusal reports a host that answered and refused us (the key, or its host key did not
// verify): a person must fix the Secret or the host, and retrying does not help.
func isRefusal(err error) bool {
	var ae *AuthError
	var he *HostKeyError
	return errors.As(err, &ae) || errors.As(err, &he)
}
