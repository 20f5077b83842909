package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// repoRoot is the main module, three levels up from this package.
const repoRoot = "../../.."

// file is what the test reads back of one entry of an image's file system.
type file struct {
	mode int64
	uid  int
	data []byte
}

// readImage loads the archive at path as the tag ref and flattens its file system.
func readImage(t *testing.T, path, ref string) (*v1.ConfigFile, map[string]file) {
	t.Helper()
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(path, &tag)
	if err != nil {
		t.Fatalf("%s as %s: %v", path, ref, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]file{}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files["/"+strings.TrimSuffix(h.Name, "/")] = file{mode: h.Mode, uid: h.Uid, data: data}
	}
	return cf, files
}

// static reports whether b is an ELF executable with no interpreter (no libc to load).
func static(t *testing.T, b []byte) bool {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not ELF: %v", err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

func TestImages(t *testing.T) {
	out := t.TempDir()
	paths, err := buildAll(repoRoot, out, runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) != len(Images) {
		t.Fatalf("wrote %v", paths)
	}
	want := map[string]struct {
		user       string
		entrypoint string
		bins       []string
	}{
		"e2e.local/jumpstarter:e2e":    {userNonRoot, "/usr/bin/jmp", []string{"/usr/bin/jmp", "/usr/bin/cp", "/bin/cp", "/jumpstarter/bin/jumpstarter-exec"}},
		"e2e.local/qemu-runtime:e2e":   {userNonRoot, "/usr/bin/qemu-runtime --require-kvm", []string{"/usr/bin/qemu-runtime"}},
		"e2e.local/qemu-runtime:crash": {userNonRoot, "/usr/bin/qemu-runtime --exit-code 1", []string{"/usr/bin/qemu-runtime"}},
		"e2e.local/pause:e2e":          {userPause, "/pause", []string{"/pause"}},
	}
	for i, spec := range Images {
		w, ok := want[spec.Ref]
		if !ok {
			t.Errorf("unexpected image %s", spec.Ref)
			continue
		}
		delete(want, spec.Ref)
		t.Run(spec.Ref, func(t *testing.T) {
			cf, files := readImage(t, paths[i], spec.Ref)
			if cf.Config.User != w.user || strings.Join(cf.Config.Entrypoint, " ") != w.entrypoint {
				t.Errorf("user %q entrypoint %q", cf.Config.User, cf.Config.Entrypoint)
			}
			if cf.OS != "linux" || cf.Architecture != runtime.GOARCH || strings.Join(cf.Config.Env, " ") != "PATH=/usr/bin:/bin" {
				t.Errorf("platform %s/%s env %q", cf.OS, cf.Architecture, cf.Config.Env)
			}
			for _, b := range w.bins {
				f, ok := files[b]
				switch {
				case !ok:
					t.Errorf("no %s", b)
				case f.mode != 0o755:
					t.Errorf("%s mode %o", b, f.mode)
				case !static(t, f.data):
					t.Errorf("%s is dynamically linked", b)
				}
			}
			if !bytes.Contains(files["/etc/passwd"].data, []byte(":65532:65532:")) || files["/tmp"].mode != 0o1777 {
				t.Errorf("passwd %q, /tmp mode %o", files["/etc/passwd"].data, files["/tmp"].mode)
			}
			if strings.HasSuffix(spec.Ref, ":latest") || !strings.Contains(spec.Ref, ":") {
				t.Errorf("%s would be pulled Always", spec.Ref)
			}
		})
	}
	for ref := range want {
		t.Errorf("no image %s", ref)
	}

	// The binaries are the stand-ins: the exporter image's jmp, run, says how it is used.
	_, files := readImage(t, paths[0], Images[0].Ref)
	jmp := filepath.Join(t.TempDir(), "jmp")
	if err := os.WriteFile(jmp, files["/usr/bin/jmp"].data, 0o755); err != nil {
		t.Fatal(err)
	}
	outb, err := exec.Command(jmp).CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.HasPrefix(string(outb), "usage: jmp run --exporter-config PATH") {
		t.Errorf("jmp from the image: %v: %s", err, outb)
	}

	// A second build gives the same bytes.
	again, err := buildAll(repoRoot, t.TempDir(), runtime.GOARCH)
	if err != nil {
		t.Fatal(err)
	}
	for i := range paths {
		if a, b := digest(t, paths[i]), digest(t, again[i]); a != b {
			t.Errorf("%s differs between two builds: %x, %x", filepath.Base(paths[i]), a, b)
		}
	}
}

func digest(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}
