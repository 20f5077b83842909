package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// standins maps each stand-in program to its package in the main module.
var standins = map[string]string{
	"jmp":              "./internal/testing/e2e/standin/jmp",
	"cp":               "./internal/testing/e2e/standin/cp",
	"jumpstarter-exec": "./internal/testing/e2e/standin/jumpstarterexec",
	"qemu-runtime":     "./internal/testing/e2e/standin/runtime",
	"pause":            "./internal/testing/e2e/standin/pause",
}

// compileStandins builds every stand-in static (no cgo: the images hold no libc), stripped
// and without local paths, so that the same tree gives the same binaries, and reads them.
func compileStandins(root, dir, arch string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(standins))
	for name, pkg := range standins {
		path := filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-s -w", "-o", path, pkg)
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
		cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("go build %s in %s: %w", pkg, root, err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		out[name] = b
	}
	return out, nil
}
