package launcher

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestServeAndAsk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "launcher.sock")
	if err := os.WriteFile(path, nil, 0o600); err != nil { // a stale file where the socket goes
		t.Fatal(err)
	}
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- Serve(ln, func(req string) string { return "GOT " + req }) }()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode()&os.ModeSocket == 0 || fi.Mode().Perm() != 0o660 {
		t.Errorf("socket mode %v, want a socket with 0660", fi.Mode())
	}
	reply, err := Ask(path, Ping, time.Second)
	if err != nil || reply != "GOT PING" {
		t.Errorf("Ask = %q, %v", reply, err)
	}
	ln.Close()
	if err := <-done; err != nil {
		t.Errorf("Serve after Close: %v", err)
	}
	if _, err := Ask(path, Ping, time.Second); err == nil {
		t.Error("Ask after the server closed succeeded")
	}
	start := time.Now()
	if _, err := AskRetrying(filepath.Join(t.TempDir(), "none.sock"), Ping, 500*time.Millisecond); err == nil {
		t.Error("AskRetrying on a missing socket succeeded")
	}
	if d := time.Since(start); d < 500*time.Millisecond || d > 5*time.Second {
		t.Errorf("AskRetrying gave up after %s, want about 500ms", d)
	}
}
