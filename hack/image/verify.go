package main

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Want is what Verify holds an image to.
type Want struct {
	Platforms []v1.Platform
	// Version and Revision, when set, must be the labels' values and what `version` prints.
	Version, Revision string
	// Run runs `version` with the binary of the machine's own platform, if the image has it.
	Run bool
}

// shells are names no entry of the image may have: the image has no shell, by design, and a
// layer that brings one is a mistake (a base image slipped in, a debugging leftover).
var shells = []string{"sh", "bash", "dash", "ash", "zsh", "ksh", "csh", "tcsh", "busybox", "toybox"}

// elfMachine is the ELF machine of a GOARCH's binaries.
var elfMachine = map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "arm": elf.EM_ARM,
	"386": elf.EM_386, "ppc64le": elf.EM_PPC64, "s390x": elf.EM_S390, "riscv64": elf.EM_RISCV}

// Verify reads idx back as a registry or runtime would and returns every way it falls short
// of the image this tool promises; nil when it holds. It says what it ran on stdout.
func Verify(idx v1.ImageIndex, w Want) error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	m, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	if m.MediaType != types.OCIImageIndex {
		fail("index media type is %q, want %q", m.MediaType, types.OCIImageIndex)
	}
	seen := map[string]bool{}
	for _, d := range m.Manifests {
		if d.Platform == nil {
			fail("manifest %s has no platform", d.Digest)
			continue
		}
		ps := platformString(*d.Platform)
		if seen[ps] {
			fail("%s: more than one manifest", ps)
		}
		seen[ps] = true
		if !slices.ContainsFunc(w.Platforms, func(p v1.Platform) bool { return platformString(p) == ps }) {
			fail("%s: a platform that was not asked for", ps)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			fail("%s: %v", ps, err)
			continue
		}
		for _, err := range verifyImage(img, *d.Platform, w) {
			fail("%s: %v", ps, err)
		}
	}
	for _, p := range w.Platforms {
		if !seen[platformString(p)] {
			fail("%s: missing from the index", platformString(p))
		}
	}
	return errors.Join(errs...)
}

// verifyImage checks one platform's image: config, labels, files, and maybe runs the binary.
func verifyImage(img v1.Image, p v1.Platform, w Want) []error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	cf, err := img.ConfigFile()
	if err != nil {
		return []error{err}
	}
	if cf.OS != p.OS || cf.Architecture != p.Architecture {
		fail("config says %s/%s, the index %s", cf.OS, cf.Architecture, platformString(p))
	}
	if err := checkUser(cf.Config.User); err != nil {
		fail("%v", err)
	}
	if !slices.Equal(cf.Config.Entrypoint, Entrypoint) || !slices.Equal(cf.Config.Cmd, Cmd) {
		fail("entrypoint %q cmd %q, want %q %q", cf.Config.Entrypoint, cf.Config.Cmd, Entrypoint, Cmd)
	}
	labels := cf.Config.Labels
	for _, k := range []string{LabelSource, LabelVersion, LabelRevision} {
		if labels[k] == "" {
			fail("label %s missing", k)
		}
	}
	if w.Version != "" && labels[LabelVersion] != w.Version {
		fail("label %s is %q, want %q", LabelVersion, labels[LabelVersion], w.Version)
	}
	if w.Revision != "" && labels[LabelRevision] != w.Revision {
		fail("label %s is %q, want %q", LabelRevision, labels[LabelRevision], w.Revision)
	}
	files, err := readFiles(img)
	if err != nil {
		return append(errs, err)
	}
	for name, f := range files {
		if slices.Contains(shells, path.Base(name)) {
			fail("/%s: a shell in the image", name)
		}
		if f.Typeflag == tar.TypeReg && f.Mode&0o6000 != 0 {
			fail("/%s: setuid or setgid", name)
		}
	}
	bin, ok := files[BinaryPath[1:]]
	if !ok || bin.Typeflag != tar.TypeReg {
		return append(errs, fmt.Errorf("%s: not a regular file in the image", BinaryPath))
	}
	if bin.Mode&0o111 == 0 {
		fail("%s is not executable (mode %o)", BinaryPath, bin.Mode)
	}
	if alias, ok := files[UpstreamBinaryPath[1:]]; !ok {
		fail("%s: missing (upstream's operator runs that command)", UpstreamBinaryPath)
	} else if alias.Typeflag != tar.TypeSymlink || path.Clean(path.Join("/", alias.Linkname)) != BinaryPath {
		fail("%s: not a symbolic link to %s", UpstreamBinaryPath, BinaryPath)
	}
	if err := checkELF(bin.data, p.Architecture); err != nil {
		fail("%s: %v", BinaryPath, err)
	}
	if w.Run && p.OS == runtime.GOOS && p.Architecture == runtime.GOARCH {
		if err := runVersion(bin.data, labels[LabelVersion], labels[LabelRevision]); err != nil {
			fail("%s version: %v", BinaryPath, err)
		}
	}
	return errs
}

// checkUser accepts only a numeric, non-root uid (and gid): runAsNonRoot can check nothing else.
func checkUser(user string) error {
	u, g, _ := strings.Cut(user, ":")
	id, err := strconv.Atoi(u)
	switch {
	case user == "":
		return errors.New("user is unset: the image runs as root")
	case err != nil:
		return fmt.Errorf("user %q is not numeric: the kubelet cannot check runAsNonRoot", user)
	case id == 0:
		return fmt.Errorf("user %q is root", user)
	}
	if g != "" {
		if _, err := strconv.Atoi(g); err != nil {
			return fmt.Errorf("group of user %q is not numeric", user)
		}
	}
	return nil
}

// checkELF checks that b is a static executable for arch: no interpreter, so nothing but the
// binary is needed in the image.
func checkELF(b []byte, arch string) error {
	f, err := elf.NewFile(bytes.NewReader(b))
	if err != nil {
		return fmt.Errorf("not an ELF binary: %w", err)
	}
	if want, ok := elfMachine[arch]; !ok || f.Machine != want {
		return fmt.Errorf("built for %s, not %s", f.Machine, arch)
	}
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return errors.New("dynamically linked (has an interpreter); build with CGO_ENABLED=0")
		}
	}
	return nil
}

// runVersion runs the binary's `version` and checks it prints the labels' version and revision.
func runVersion(bin []byte, version, revision string) error {
	dir, err := os.MkdirTemp("", "image-verify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	exe := filepath.Join(dir, path.Base(BinaryPath))
	if err := os.WriteFile(exe, bin, 0o755); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, exe, "version").CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	for _, want := range []string{"exporterset-controller " + version + "\n", "commit: " + revision + "\n"} {
		if !strings.Contains(string(out), want) {
			return fmt.Errorf("output lacks %q:\n%s", strings.TrimSpace(want), out)
		}
	}
	fmt.Printf("image-verify: ran %s version (%s/%s):\n%s", BinaryPath, runtime.GOOS, runtime.GOARCH, indent(string(out)))
	return nil
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n  ") + "\n"
}

// entry is a file of the image's flattened filesystem; data is read for the binary only.
type entry struct {
	*tar.Header
	data []byte
}

// readFiles flattens the image's layers (a later layer's entry replaces an earlier one;
// whiteouts remove).
func readFiles(img v1.Image) (map[string]entry, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	files := map[string]entry{}
	for i, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			return nil, err
		}
		tr := tar.NewReader(rc)
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rc.Close()
				return nil, fmt.Errorf("layer %d: %w", i, err)
			}
			name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
			if base := path.Base(name); strings.HasPrefix(base, ".wh.") {
				delete(files, path.Join(path.Dir(name), strings.TrimPrefix(base, ".wh.")))
				continue
			}
			e := entry{Header: h}
			if name == BinaryPath[1:] {
				if e.data, err = io.ReadAll(tr); err != nil {
					rc.Close()
					return nil, err
				}
			}
			files[name] = e
		}
		rc.Close()
	}
	return files, nil
}
