package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/exporterset/exporterset/internal/testing/testenv"
	"github.com/exporterset/exporterset/internal/testing/testproc"
)

var (
	env    *testenv.Env
	binary string // the built exporterset-controller
)

// TestMain builds the binary once and starts one API server for the package: the tests run
// the real binary as a subprocess, as an operator would.
func TestMain(m *testing.M) {
	b, dir, err := testproc.Build("exporterset-controller")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = b
	code := func() int {
		defer os.RemoveAll(dir)
		e, err := testenv.Start()
		if err != nil {
			fmt.Fprintf(os.Stderr, "testenv: %v\n", err)
			return 1
		}
		defer func() { _ = e.Stop() }()
		env = e
		return m.Run()
	}()
	os.Exit(code)
}

func start(t *testing.T, args ...string) *testproc.Proc {
	t.Helper()
	return testproc.Start(t, binary, args...)
}

func kubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(path); err != nil {
		t.Fatal(err)
	}
	return path
}

var ctx = context.Background()
