// Package launcher is the line protocol between the stand-in target runtime (which serves
// $JUMPSTARTER_LAUNCHER_SOCKET) and its clients, the stand-in exporter and jumpstarter-exec:
// one request line, one reply line, then the server closes the connection.
package launcher

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// EnvSocket names the environment variable holding the launcher socket's path.
const EnvSocket = "JUMPSTARTER_LAUNCHER_SOCKET"

// Requests the runtime answers; anything else gets "ERR unknown request".
const (
	// Ping is answered "PONG <server name>".
	Ping = "PING"
	// Status is answered "OK <what the runtime holds>".
	Status = "STATUS"
)

// Ask sends one request line to the socket at path and returns the reply line.
func Ask(path, request string, timeout time.Duration) (string, error) {
	conn, err := net.DialTimeout("unix", path, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return "", err
	}
	if _, err := fmt.Fprintf(conn, "%s\n", request); err != nil {
		return "", err
	}
	reply, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil {
		return "", fmt.Errorf("reading the reply to %s: %w", request, err)
	}
	return strings.TrimSuffix(reply, "\n"), nil
}

// AskRetrying asks until a reply comes or wait has passed (the server may still be starting),
// and returns the last error.
func AskRetrying(path, request string, wait time.Duration) (string, error) {
	deadline := time.Now().Add(wait)
	for {
		reply, err := Ask(path, request, 2*time.Second)
		if err == nil || time.Now().After(deadline) {
			return reply, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Listen replaces a stale socket at path and listens on it, readable and writable by its
// owner and group (the Pod's fsGroup), which is how the exporter, running as the same user,
// reaches it.
func Listen(path string) (net.Listener, error) {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o660); err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// Serve answers each connection's request line with answer's reply until ln is closed.
func Serve(ln net.Listener, answer func(request string) string) error {
	for {
		conn, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		go func() {
			defer conn.Close()
			_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
			line, err := bufio.NewReader(conn).ReadString('\n')
			if err != nil {
				return
			}
			fmt.Fprintf(conn, "%s\n", answer(strings.TrimSpace(line)))
		}()
	}
}
