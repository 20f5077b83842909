package baremetal

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Connection reuse. The reconciler calls the provisioner for every instance on every pass;
// an SSH handshake each time would cost a round trip or three and a key exchange per call,
// and hundreds of sessions a minute in the hosts' auth logs. So connections are kept, per
// host, user and credentials content, while they are used and alive.
const (
	// connIdleTimeout closes a connection nobody used for that long: a lab host should not
	// carry a session for a class that stopped reconciling.
	connIdleTimeout = 2 * time.Minute
	// connPingTimeout bounds the keepalive sent before a kept connection is reused. A host
	// that went away silently (powered off, unplugged) leaves a connection that would hang
	// the next command until TCP gives up, many minutes later; the keepalive notices it.
	connPingTimeout = 5 * time.Second
	// connDownFor is how long a failed dial is remembered: a dead host is then reported at
	// once to the other calls of the same pass instead of each waiting DefaultDialTimeout.
	connDownFor = 10 * time.Second
	// connRunGrace is how long a command may outlive its context before its connection is
	// closed under it: Run honours the context only once the command started, and opening a
	// session on a dead connection would otherwise not return.
	connRunGrace = 2 * time.Second
	// connCommandTimeout bounds a command whose context has no deadline (the controller's
	// passes have none). A host that goes away while a command runs on a kept connection
	// leaves the command waiting for TCP to give up, a quarter of an hour later, and the
	// set's worker with it: found when a lab host was cut during a pass. The longest
	// command, a Stop, waits about 5 s for its processes.
	connCommandTimeout = 30 * time.Second
)

// errPoolClosed is returned once the Provisioner is closed.
var errPoolClosed = errors.New("qemu-baremetal: the provisioner is closed")

// Conn is a connection to one lab host as the Provisioner uses it. *Client is the real one.
type Conn interface {
	Runner
	// Close closes the connection.
	Close() error
}

// DialFunc connects to lab host h as user with creds, failing with *UnreachableError,
// *AuthError or *HostKeyError (naming the host) as Dial does.
type DialFunc func(ctx context.Context, h Host, user string, creds *Credentials) (Conn, error)

// DialConn is Dial as a DialFunc, the Provisioner's default.
func DialConn(ctx context.Context, h Host, user string, creds *Credentials) (Conn, error) {
	c, err := Dial(ctx, h, user, creds)
	if err != nil {
		return nil, err // an untyped nil: a nil *Client in a Conn would not be nil
	}
	return c, nil
}

// pinger is a Conn that can tell whether its peer still answers.
type pinger interface {
	ping(ctx context.Context) error
}

// ping sends an OpenSSH keepalive request and waits for the answer (any answer: a server
// that does not know the request still replies that it failed).
func (c *Client) ping(ctx context.Context) error {
	res := make(chan error, 1)
	go func() {
		// On a dead connection this blocks until the connection is closed, which the pool
		// does when ping fails; the goroutine ends then.
		_, _, err := c.conn.SendRequest("keepalive@openssh.com", true, nil)
		res <- err
	}()
	select {
	case err := <-res:
		if err != nil {
			return &UnreachableError{Host: c.host.Name, Address: hostAddress(c.host), Err: fmt.Errorf("keepalive: %w", err)}
		}
		return nil
	case <-ctx.Done():
		return &UnreachableError{Host: c.host.Name, Address: hostAddress(c.host), Err: fmt.Errorf("no answer to a keepalive: %w", ctx.Err())}
	}
}

// credentialsID identifies the content of a credentials Secret without keeping it: a changed
// key or known_hosts must not reuse a connection made (and a host key accepted) with the old
// ones.
func credentialsID(data map[string][]byte) string {
	h := sha256.New()
	for _, k := range []string{SecretKeyPrivateKey, SecretKeyKnownHosts} {
		_ = binary.Write(h, binary.BigEndian, uint64(len(data[k])))
		h.Write(data[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// connKey identifies a reusable connection. The host's name is part of it because the
// connection's errors name the host it was dialled for.
type connKey struct {
	name, address, user, credsID string
}

// connEntry is one kept connection, or one being dialled.
type connEntry struct {
	key connKey
	// ready is closed when the dial ended; conn is nil then if it failed.
	ready chan struct{}
	conn  Conn
	// refs counts the calls using the connection (or waiting for its dial); lastUsed is when
	// the last of them ended. Both are guarded by the pool's mutex.
	refs      int
	lastUsed  time.Time
	closeOnce sync.Once
}

// closeConn closes the connection once.
func (e *connEntry) closeConn() {
	e.closeOnce.Do(func() {
		if e.conn != nil {
			_ = e.conn.Close()
		}
	})
}

// downEntry remembers a failed dial.
type downEntry struct {
	until time.Time
	err   error
}

// connPool is the cache of connections. A mutex guards it; dials and pings happen outside it.
type connPool struct {
	dial DialFunc
	now  func() time.Time
	// The durations are fields so that tests can shorten them.
	idle, pingTimeout, downFor, runGrace, commandTimeout time.Duration

	mu      sync.Mutex
	entries map[connKey]*connEntry
	down    map[connKey]downEntry
	timer   *time.Timer
	closed  bool
}

// newConnPool returns an empty pool dialling with dial.
func newConnPool(dial DialFunc, now func() time.Time) *connPool {
	return &connPool{
		dial: dial, now: now,
		idle: connIdleTimeout, pingTimeout: connPingTimeout, downFor: connDownFor, runGrace: connRunGrace,
		commandTimeout: connCommandTimeout,
		entries:        map[connKey]*connEntry{}, down: map[connKey]downEntry{},
	}
}

// with runs fn with a connection to h, kept or dialled. When fn fails with an
// *UnreachableError on a kept connection, that says the connection died since its last use
// (sshd restarted, a NAT forgot it), not that the host is gone: the connection is dropped
// and fn runs once more on a fresh one. fn must therefore be idempotent, as every Machine
// operation is.
func (p *connPool) with(ctx context.Context, h Host, user string, creds *Credentials, credsID string, fn func(Runner) error) error {
	for attempt := 0; ; attempt++ {
		e, kept, err := p.get(ctx, h, user, creds, credsID)
		if err != nil {
			return err
		}
		err = fn(&lease{pool: p, e: e})
		p.release(e)
		if err != nil && kept && attempt == 0 && isUnreachable(err) && ctx.Err() == nil {
			continue
		}
		return err
	}
}

// get returns a live connection for the key of h, user and credsID, and whether it was kept
// from an earlier call. The caller releases it.
func (p *connPool) get(ctx context.Context, h Host, user string, creds *Credentials, credsID string) (*connEntry, bool, error) {
	key := connKey{name: h.Name, address: hostAddress(h), user: user, credsID: credsID}
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, false, errPoolClosed
		}
		e := p.entries[key]
		if e == nil {
			if d, ok := p.down[key]; ok && p.now().Before(d.until) {
				p.mu.Unlock()
				return nil, false, d.err
			}
			e = &connEntry{key: key, ready: make(chan struct{}), refs: 1}
			p.entries[key] = e
			p.mu.Unlock()
			return p.dialEntry(ctx, e, h, user, creds)
		}
		e.refs++
		p.mu.Unlock()
		select {
		case <-e.ready:
		case <-ctx.Done():
			p.release(e)
			return nil, false, fmt.Errorf("lab host %q: waiting for the connection: %w", h.Name, ctx.Err())
		}
		if e.conn == nil {
			// Another call's dial failed and took the entry away: look again, which finds
			// the remembered failure or dials anew.
			p.release(e)
			if err := ctx.Err(); err != nil {
				return nil, false, fmt.Errorf("lab host %q: %w", h.Name, err)
			}
			continue
		}
		if err := p.ping(ctx, e); err != nil {
			p.release(e)
			if ctx.Err() != nil {
				return nil, false, err // our deadline, not the connection's fault
			}
			p.discard(e)
			continue // dial anew: the entry is gone
		}
		return e, true, nil
	}
}

// dialEntry dials for e, the placeholder get put in the map, and publishes the result.
func (p *connPool) dialEntry(ctx context.Context, e *connEntry, h Host, user string, creds *Credentials) (*connEntry, bool, error) {
	conn, err := p.dial(ctx, h, user, creds)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err == nil && p.closed {
		_ = conn.Close()
		err = errPoolClosed
	}
	if err != nil {
		if p.entries[e.key] == e {
			delete(p.entries, e.key)
		}
		e.refs--
		close(e.ready)
		// Only a host that does not answer is remembered: a refused key or host key is
		// already final, and a dial cut by our own context says nothing about the host.
		if isUnreachable(err) && ctx.Err() == nil && p.downFor > 0 && !p.closed {
			p.down[e.key] = downEntry{until: p.now().Add(p.downFor), err: err}
		}
		return nil, false, err
	}
	e.conn = conn
	e.lastUsed = p.now()
	delete(p.down, e.key)
	close(e.ready)
	p.scheduleSweepLocked()
	return e, false, nil
}

// ping checks a kept connection with its own timeout (shorter than the caller's context, so
// that a dead host is found out while there is time to report it).
func (p *connPool) ping(ctx context.Context, e *connEntry) error {
	pc, ok := e.conn.(pinger)
	if !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, p.pingTimeout)
	defer cancel()
	return pc.ping(ctx)
}

// release ends one use of e.
func (p *connPool) release(e *connEntry) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e.refs--
	e.lastUsed = p.now()
}

// discard drops e from the pool and closes its connection; calls still using it fail.
func (p *connPool) discard(e *connEntry) {
	p.mu.Lock()
	if p.entries[e.key] == e {
		delete(p.entries, e.key)
	}
	p.mu.Unlock()
	e.closeConn()
}

// scheduleSweepLocked arms the idle timer unless it is armed. p.mu is held.
func (p *connPool) scheduleSweepLocked() {
	if p.timer == nil && !p.closed && p.idle > 0 {
		p.timer = time.AfterFunc(p.idle/2, p.sweep)
	}
}

// sweep closes the connections idle for p.idle and forgets expired dial failures; it runs
// every p.idle/2 while there are connections, so one is closed between idle and 1.5 idle
// after its last use.
func (p *connPool) sweep() {
	p.mu.Lock()
	p.timer = nil
	now := p.now()
	var idle []*connEntry
	for k, e := range p.entries {
		if e.conn != nil && e.refs == 0 && now.Sub(e.lastUsed) >= p.idle {
			delete(p.entries, k)
			idle = append(idle, e)
		}
	}
	for k, d := range p.down {
		if !now.Before(d.until) {
			delete(p.down, k)
		}
	}
	if len(p.entries) > 0 {
		p.scheduleSweepLocked()
	}
	p.mu.Unlock()
	for _, e := range idle {
		e.closeConn()
	}
}

// Close closes every connection and refuses new ones.
func (p *connPool) Close() error {
	p.mu.Lock()
	p.closed = true
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	var all []*connEntry
	for k, e := range p.entries {
		delete(p.entries, k)
		if e.conn != nil {
			all = append(all, e)
		}
	}
	p.mu.Unlock()
	for _, e := range all {
		e.closeConn()
	}
	return nil
}

// lease is a kept connection lent to one call. Its Run drops the connection when it proves
// dead, and bounds a command by its context even where the SSH library does not.
type lease struct {
	pool *connPool
	e    *connEntry
}

// Run implements Runner.
func (l *lease) Run(ctx context.Context, argv []string, stdin []byte) ([]byte, []byte, error) {
	if _, ok := ctx.Deadline(); !ok && l.pool.commandTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, l.pool.commandTimeout)
		defer cancel()
	}
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		t := time.NewTimer(l.pool.runGrace)
		defer t.Stop()
		select {
		case <-done:
		case <-t.C:
			// The command ignored its context: it hangs on a dead connection. Closing the
			// connection makes it return.
			l.pool.discard(l.e)
		}
	})
	out, errOut, err := l.e.conn.Run(ctx, argv, stdin)
	close(done)
	stop()
	if isUnreachable(err) {
		l.pool.discard(l.e)
	}
	return out, errOut, err
}

// isUnreachable reports whether err says a host or connection does not answer.
func isUnreachable(err error) bool {
	var ue *UnreachableError
	return errors.As(err, &ue)
}
