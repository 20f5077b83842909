package main

import (
	"fmt"
	"os"
	"testing"

	"github.com/exporterset/exporterset/internal/testing/testproc"
)

var binary string // the built exporterset-dev

// TestMain builds the binary once: the tests run it as a person would. It starts its own
// control plane, so the package needs no shared one.
func TestMain(m *testing.M) {
	b, dir, err := testproc.Build("exporterset-dev")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = b
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// The hint for a later command must outlive this process: a `go run` build is replaced by
// `go run ./cmd/exporterset-dev`; a real binary is named by its path.
func TestUnderGoRun(t *testing.T) {
	for exe, want := range map[string]bool{
		"/tmp/go-build1234567/b001/exe/exporterset-dev":        true,
		"/root/.cache/tmp/go-build99/b001/exe/exporterset-dev": true,
		"/work/main/bin/exporterset-dev":                       false,
		"/tmp/exporterset-dev-e2e-1/exporterset-dev":           false,
		"/home/me/exe/exporterset-dev":                         false,
	} {
		if got := underGoRun(exe); got != want {
			t.Errorf("underGoRun(%s) = %v, want %v", exe, got, want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/state":   "/tmp/state",
		"/tmp/my dir":  "'/tmp/my dir'",
		"it's":         `'it'\''s'`,
		"":             "''",
		"--release=x1": "--release=x1",
	} {
		if got := shellQuote(in); got != want {
			t.Errorf("shellQuote(%q) = %q, want %q", in, got, want)
		}
	}
}
