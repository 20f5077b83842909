package main

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCopyFileKeepsExecutableBit(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "jumpstarter-exec")
	if err := os.WriteFile(src, []byte("binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(dir, "shared")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	// An old, non-executable copy is replaced, mode included.
	if err := os.WriteFile(filepath.Join(shared, "jumpstarter-exec"), []byte("old content, longer"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(src, shared); err != nil { // DST a directory
		t.Fatal(err)
	}
	dst := filepath.Join(shared, "jumpstarter-exec")
	fi, err := os.Stat(dst)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 {
		t.Errorf("copy mode %v, want 0755", fi.Mode())
	}
	if b, _ := os.ReadFile(dst); string(b) != "binary" {
		t.Errorf("copy holds %q", b)
	}
	if err := copyFile(filepath.Join(dir, "absent"), dst); err == nil {
		t.Error("copying a missing file succeeded")
	}
	if err := copyFile(shared, filepath.Join(dir, "x")); err == nil {
		t.Error("copying a directory succeeded")
	}
}
