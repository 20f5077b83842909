package baremetal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/ssh"
)

// DefaultDialTimeout bounds connecting and the SSH handshake when the context has no earlier
// deadline: a lab host that does not answer within it is reported unreachable rather than
// holding a reconcile.
const DefaultDialTimeout = 15 * time.Second

// maxOutput caps what Run keeps of a command's stdout and of its stderr; the scripts here
// print little, and a runaway remote program must not grow the controller's memory.
const maxOutput = 1 << 20

// Credentials are the parsed credentials Secret: the client key and the host keys to trust.
// They are parsed once and shared by every dial; never log them.
type Credentials struct {
	signer ssh.Signer
	hosts  knownHosts
}

// ParseCredentials parses the credentials Secret's data: SecretKeyPrivateKey (an unencrypted
// OpenSSH or PEM private key) and SecretKeyKnownHosts (OpenSSH known_hosts lines). Errors
// name the key but never quote key material.
func ParseCredentials(data map[string][]byte) (*Credentials, error) {
	key, ok := data[SecretKeyPrivateKey]
	if !ok || len(bytes.TrimSpace(key)) == 0 {
		return nil, fmt.Errorf("credentials Secret has no %q", SecretKeyPrivateKey)
	}
	kh, ok := data[SecretKeyKnownHosts]
	if !ok || len(bytes.TrimSpace(kh)) == 0 {
		return nil, fmt.Errorf("credentials Secret has no %q: host keys are always verified", SecretKeyKnownHosts)
	}
	signer, err := ssh.ParsePrivateKey(key)
	if err != nil {
		var pe *ssh.PassphraseMissingError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("credentials Secret %q is passphrase-protected; give an unencrypted key", SecretKeyPrivateKey)
		}
		return nil, fmt.Errorf("credentials Secret %q is not a private key: %v", SecretKeyPrivateKey, err)
	}
	hosts, err := parseKnownHosts(kh)
	if err != nil {
		return nil, fmt.Errorf("credentials Secret: %w", err)
	}
	return &Credentials{signer: signer, hosts: hosts}, nil
}

// Client is an SSH connection to one lab host. It is safe for concurrent use: each Run opens
// a session of its own.
type Client struct {
	host Host
	conn *ssh.Client
}

// Dial connects to h as user, authenticating with creds' key and verifying the host key
// against creds' known_hosts. Its errors are *UnreachableError, *AuthError or *HostKeyError,
// each naming the host.
func Dial(ctx context.Context, h Host, user string, creds *Credentials) (*Client, error) {
	addr := hostAddress(h)
	if creds == nil {
		return nil, errors.New("no credentials")
	}
	deadline := time.Now().Add(DefaultDialTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	dctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()

	var d net.Dialer
	tcp, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, &UnreachableError{Host: h.Name, Address: addr, Err: err}
	}
	// The handshake has no context of its own: a deadline on the socket bounds it, and
	// closing the socket aborts it when ctx is cancelled first.
	_ = tcp.SetDeadline(deadline)
	stop := context.AfterFunc(dctx, func() { _ = tcp.Close() })

	// The callback's error is kept here as well as returned: x/crypto/ssh wraps it in its
	// handshake error, and the typed value is what callers match on.
	var keyErr error
	cfg := &ssh.ClientConfig{
		User: user,
		Auth: []ssh.AuthMethod{ssh.PublicKeys(creds.signer)},
		HostKeyCallback: func(_ string, _ net.Addr, key ssh.PublicKey) error {
			keyErr = creds.hosts.check(h.Name, addr, key)
			return keyErr
		},
		HostKeyAlgorithms: creds.hosts.algorithms(addr),
	}
	c, chans, reqs, err := ssh.NewClientConn(tcp, addr, cfg)
	stopped := stop()
	if err != nil {
		_ = tcp.Close()
		switch {
		case keyErr != nil:
			return nil, keyErr
		case strings.Contains(err.Error(), "unable to authenticate"):
			return nil, &AuthError{Host: h.Name, Address: addr, User: user, Err: err}
		case !stopped:
			// The context (or the dial deadline) ended the handshake by closing the socket.
			return nil, &UnreachableError{Host: h.Name, Address: addr, Err: fmt.Errorf("SSH handshake: %w", dctx.Err())}
		default:
			return nil, &UnreachableError{Host: h.Name, Address: addr, Err: err}
		}
	}
	if !stopped {
		// The context ended just as the handshake finished and the socket is closed.
		_ = c.Close()
		return nil, &UnreachableError{Host: h.Name, Address: addr, Err: fmt.Errorf("SSH handshake: %w", dctx.Err())}
	}
	_ = tcp.SetDeadline(time.Time{})
	return &Client{host: h, conn: ssh.NewClient(c, chans, reqs)}, nil
}

// Host returns the host the client is connected to.
func (c *Client) Host() Host { return c.host }

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Run runs argv on the host, quoted with QuoteArgv so it arrives as exactly that argv, with
// stdin as its standard input (nil for none), and returns what it wrote. A non-zero exit is a
// *CommandError, a lost connection an *UnreachableError. Cancelling ctx closes the session,
// which ends the remote command (sshd hangs up on it) and returns ctx's error.
func (c *Client) Run(ctx context.Context, argv []string, stdin []byte) (stdout, stderr []byte, err error) {
	cmd, err := QuoteArgv(argv)
	if err != nil {
		return nil, nil, err
	}
	sess, err := c.conn.NewSession()
	if err != nil {
		return nil, nil, &UnreachableError{Host: c.host.Name, Address: hostAddress(c.host), Err: err}
	}
	defer sess.Close()
	var out, errOut cappedBuffer
	sess.Stdout, sess.Stderr = &out, &errOut
	if stdin != nil {
		sess.Stdin = bytes.NewReader(stdin)
	}
	if err := sess.Start(cmd); err != nil {
		return nil, nil, &UnreachableError{Host: c.host.Name, Address: hostAddress(c.host), Err: err}
	}
	done := make(chan error, 1)
	go func() { done <- sess.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		// Ask for the signal where the server honours it, then close the channel, which
		// sshd turns into a hang-up of the command.
		_ = sess.Signal(ssh.SIGKILL)
		_ = sess.Close()
		return out.Bytes(), errOut.Bytes(), fmt.Errorf("lab host %q: %s: %w", c.host.Name, argv[0], ctx.Err())
	}
	var exit *ssh.ExitError
	switch {
	case err == nil:
		return out.Bytes(), errOut.Bytes(), nil
	case errors.As(err, &exit):
		return out.Bytes(), errOut.Bytes(), &CommandError{Host: c.host.Name, Command: argv[0], ExitStatus: exit.ExitStatus(), Stderr: string(errOut.Bytes())}
	default:
		return out.Bytes(), errOut.Bytes(), &UnreachableError{Host: c.host.Name, Address: hostAddress(c.host), Err: err}
	}
}

// cappedBuffer keeps the first maxOutput bytes written to it and drops the rest, claiming
// success so the remote side is not stalled by a short write.
type cappedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write implements io.Writer.
func (b *cappedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := maxOutput - b.buf.Len(); room > 0 {
		if len(p) > room {
			b.buf.Write(p[:room])
		} else {
			b.buf.Write(p)
		}
	}
	return len(p), nil
}

// Bytes returns what was kept.
func (b *cappedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}
