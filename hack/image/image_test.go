package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

var (
	amd64 = v1.Platform{OS: "linux", Architecture: "amd64"}
	arm64 = v1.Platform{OS: "linux", Architecture: "arm64"}
	meta  = Meta{Source: "https://example.com/src", Version: "v9.8.7", Revision: "0123abcd", Created: time.Unix(1700000000, 0).UTC()}
	want  = Want{Platforms: []v1.Platform{amd64, arm64}, Version: meta.Version, Revision: meta.Revision, Run: true}
)

// fakeController is a stand-in for the controller binary with the same `version` output; the
// real one takes a minute to cross-compile, and `make image` checks that one.
const fakeController = `package main

import (
	"fmt"
	"os"
)

var version, revision string

func main() {
	if len(os.Args) == 2 && os.Args[1] == "version" {
		fmt.Printf("exporterset-controller %s\ncommit: %s\n", version, revision)
		return
	}
	os.Exit(2)
}
`

var (
	binsOnce sync.Once
	bins     map[string][]byte
	binsErr  error
)

// binaries compiles fakeController for both platforms with meta's version, once.
func binaries(t *testing.T) map[string][]byte {
	t.Helper()
	binsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "image-test-")
		if err != nil {
			binsErr = err
			return
		}
		defer os.RemoveAll(dir)
		for name, content := range map[string]string{"go.mod": "module fake\n\ngo 1.22\n", "main.go": fakeController} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				binsErr = err
				return
			}
		}
		bins = map[string][]byte{}
		for _, p := range []v1.Platform{amd64, arm64} {
			out := filepath.Join(dir, p.Architecture)
			if binsErr = compile(dir, ".", out, p, meta); binsErr != nil {
				return
			}
			if bins[p.Architecture], binsErr = os.ReadFile(out); binsErr != nil {
				return
			}
		}
	})
	if binsErr != nil {
		t.Fatal(binsErr)
	}
	return bins
}

func platforms(t *testing.T, ps ...v1.Platform) []Platform {
	b := binaries(t)
	var out []Platform
	for _, p := range ps {
		out = append(out, Platform{Platform: p, Binary: b[p.Architecture]})
	}
	return out
}

func goodIndex(t *testing.T) v1.ImageIndex {
	t.Helper()
	idx, err := NewIndex(platforms(t, amd64, arm64), meta)
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// replace rebuilds idx with change applied to the image of platform p.
func replace(t *testing.T, idx v1.ImageIndex, p v1.Platform, change func(v1.Image) v1.Image) v1.ImageIndex {
	t.Helper()
	m, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	out := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, d := range m.Manifests {
		img, err := idx.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		if platformString(*d.Platform) == platformString(p) {
			img = change(img)
		}
		out = mutate.AppendManifests(out, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: d.Platform}})
	}
	return out
}

func withConfig(t *testing.T, change func(*v1.Config)) func(v1.Image) v1.Image {
	return func(img v1.Image) v1.Image {
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cf = cf.DeepCopy()
		change(&cf.Config)
		img, err = mutate.ConfigFile(img, cf)
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
}

func withFiles(t *testing.T, files ...file) func(v1.Image) v1.Image {
	return func(img v1.Image) v1.Image {
		l, err := layer(files, meta.Created)
		if err != nil {
			t.Fatal(err)
		}
		img, err = mutate.AppendLayers(img, l)
		if err != nil {
			t.Fatal(err)
		}
		return img
	}
}

// The image as built passes, after a round trip through the OCI layout on disk, and its
// binary ran (on amd64 and arm64 machines).
func TestGoodImagePasses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "oci")
	ref, _ := name.NewTag("example.com/ctl:" + meta.Version)
	if err := writeLayout(dir, goodIndex(t), ref); err != nil {
		t.Fatal(err)
	}
	idx, err := readLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(idx, want); err != nil {
		t.Fatalf("the built image fails its check:\n%v", err)
	}
	archives, err := writeArchives(t.TempDir(), idx, ref)
	if err != nil || len(archives) != 2 {
		t.Fatalf("archives %v: %v", archives, err)
	}
	// Each archive holds its platform's image, under the tag, as `docker load` reads it.
	for i, p := range []v1.Platform{amd64, arm64} {
		img, err := tarball.ImageFromPath(archives[i], &ref)
		if err != nil {
			t.Fatal(err)
		}
		if errs := verifyImage(img, p, want); len(errs) > 0 {
			t.Errorf("%s: %v", archives[i], errs)
		}
	}
}

// A rebuild of the same inputs is byte-identical: same index digest.
func TestReproducible(t *testing.T) {
	a, b := goodIndex(t), goodIndex(t)
	da, _ := a.Digest()
	db, _ := b.Digest()
	if da != db {
		t.Fatalf("two builds of the same inputs differ: %s and %s", da, db)
	}
}

// Each way an image can fall short is caught, with a message that names it.
func TestBadImagesFail(t *testing.T) {
	sh := file{name: "bin/sh", mode: 0o755, data: []byte("\x7fELF")}
	for _, tc := range []struct {
		name string
		idx  func(*testing.T) v1.ImageIndex
		want string
		w    *Want
	}{
		{"root user", func(t *testing.T) v1.ImageIndex {
			return replace(t, goodIndex(t), amd64, withConfig(t, func(c *v1.Config) { c.User = "0:0" }))
		}, `linux/amd64: user "0:0" is root`, nil},
		{"no user", func(t *testing.T) v1.ImageIndex {
			return replace(t, goodIndex(t), arm64, withConfig(t, func(c *v1.Config) { c.User = "" }))
		}, "linux/arm64: user is unset", nil},
		{"named user", func(t *testing.T) v1.ImageIndex {
			return replace(t, goodIndex(t), amd64, withConfig(t, func(c *v1.Config) { c.User = "nonroot" }))
		}, "not numeric", nil},
		{"missing arch", func(t *testing.T) v1.ImageIndex {
			idx, err := NewIndex(platforms(t, amd64), meta)
			if err != nil {
				t.Fatal(err)
			}
			return idx
		}, "linux/arm64: missing from the index", nil},
		{"a shell", func(t *testing.T) v1.ImageIndex {
			return replace(t, goodIndex(t), arm64, withFiles(t, file{name: "bin/", mode: 0o755}, sh))
		},
			"linux/arm64: /bin/sh: a shell in the image", nil},
		{"busybox", func(t *testing.T) v1.ImageIndex {
			return replace(t, goodIndex(t), amd64, withFiles(t, file{name: "usr/bin/busybox", mode: 0o755}))
		}, "/usr/bin/busybox: a shell", nil},
		{"entrypoint", func(t *testing.T) v1.ImageIndex {
			return replace(t, goodIndex(t), amd64, withConfig(t, func(c *v1.Config) { c.Entrypoint = []string{"/bin/sh", "-c"} }))
		}, "entrypoint", nil},
		{"label missing", func(t *testing.T) v1.ImageIndex {
			return replace(t, goodIndex(t), amd64, withConfig(t, func(c *v1.Config) { delete(c.Labels, LabelRevision) }))
		}, "label org.opencontainers.image.revision missing", nil},
		{"binary of the other arch", func(t *testing.T) v1.ImageIndex {
			swapped := platforms(t, amd64, arm64)
			swapped[0].Binary, swapped[1].Binary = swapped[1].Binary, swapped[0].Binary
			idx, err := NewIndex(swapped, meta)
			if err != nil {
				t.Fatal(err)
			}
			return idx
		}, "built for EM_AARCH64, not amd64", nil},
		{"no binary", func(t *testing.T) v1.ImageIndex {
			return replace(t, goodIndex(t), amd64, withFiles(t, file{name: ".wh.exporterset-controller"}))
		}, "/exporterset-controller: not a regular file", nil},
		{"no upstream command", func(t *testing.T) v1.ImageIndex {
			return replace(t, goodIndex(t), arm64, withFiles(t, file{name: ".wh.exporter-set-controller"}))
		}, "linux/arm64: /exporter-set-controller: missing", nil},
		{"upstream command elsewhere", func(t *testing.T) v1.ImageIndex {
			return replace(t, goodIndex(t), amd64, withFiles(t, file{name: "exporter-set-controller", link: "tmp/x"}))
		}, "linux/amd64: /exporter-set-controller: not a symbolic link to /exporterset-controller", nil},
		{"upstream command a copy", func(t *testing.T) v1.ImageIndex {
			return replace(t, goodIndex(t), amd64, withFiles(t, file{name: "exporter-set-controller", mode: 0o755, data: []byte("x")}))
		}, "not a symbolic link", nil},
		{"another version", func(t *testing.T) v1.ImageIndex { return goodIndex(t) }, `label org.opencontainers.image.version is "v9.8.7", want "v1.0.0"`,
			&Want{Platforms: want.Platforms, Version: "v1.0.0", Run: true}},
		{"label and binary disagree", func(t *testing.T) v1.ImageIndex {
			return replace(t, goodIndex(t), v1.Platform{OS: "linux", Architecture: runtime.GOARCH},
				withConfig(t, func(c *v1.Config) { c.Labels[LabelVersion] = "v0.0.1" }))
		}, "version: output lacks \"exporterset-controller v0.0.1\"", &Want{Platforms: want.Platforms, Run: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := want
			if tc.w != nil {
				w = *tc.w
			}
			err := Verify(tc.idx(t), w)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// The real build's metadata comes from git: a version, a revision, the commit's time.
func TestGitMeta(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	m, err := gitMeta("../..", Meta{})
	if errors.Is(err, exec.ErrNotFound) || (err != nil && strings.Contains(err.Error(), "not a git repository")) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if m.Version == "" || len(m.Revision) != 40 || m.Created.IsZero() || m.Created.After(time.Now()) {
		t.Fatalf("git metadata %+v", m)
	}
	t.Logf("git: %+v", m)
}
