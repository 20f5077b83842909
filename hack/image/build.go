package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// compile builds the controller for one platform as the image ships it: static (no cgo),
// stripped, with no local paths (-trimpath) and the version and revision linked in. The VCS
// stamp is off because the revision is given explicitly: it builds the same from a tarball,
// and a dirty tree does not change the binary.
func compile(root, pkg, out string, p v1.Platform, meta Meta) error {
	ldflags := fmt.Sprintf("-s -w -X main.version=%s -X main.revision=%s", meta.Version, meta.Revision)
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+p.OS, "GOARCH="+p.Architecture)
	if p.Architecture == "arm" && p.Variant != "" {
		cmd.Env = append(cmd.Env, "GOARM="+strings.TrimPrefix(p.Variant, "v"))
	}
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s for %s: %w", pkg, platformString(p), err)
	}
	return nil
}

// compileAll builds pkg for every platform into dir and reads the binaries.
func compileAll(root, pkg, dir string, platforms []v1.Platform, meta Meta) ([]Platform, error) {
	var out []Platform
	for _, p := range platforms {
		path := filepath.Join(dir, "exporterset-controller-"+strings.ReplaceAll(platformString(p), "/", "-"))
		start := time.Now()
		if err := compile(root, pkg, path, p, meta); err != nil {
			return nil, err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "image: built %s (%d MB) in %s\n", path, len(b)>>20, time.Since(start).Round(100*time.Millisecond))
		out = append(out, Platform{Platform: p, Binary: b})
	}
	return out, nil
}

// gitMeta fills what meta lacks from the git checkout at root: version from `git describe`
// (with -dirty), revision and the commit's time.
func gitMeta(root string, meta Meta) (Meta, error) {
	git := func(args ...string) (string, error) {
		cmd := exec.Command("git", args...)
		cmd.Dir = root
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
		}
		return strings.TrimSpace(string(out)), nil
	}
	var err error
	if meta.Version == "" {
		if meta.Version, err = git("describe", "--tags", "--always", "--dirty"); err != nil {
			return meta, err
		}
	}
	if meta.Revision == "" {
		if meta.Revision, err = git("rev-parse", "HEAD"); err != nil {
			return meta, err
		}
	}
	if meta.Created.IsZero() {
		ct, err := git("log", "-1", "--format=%ct", meta.Revision)
		if err != nil {
			return meta, err
		}
		sec, err := strconv.ParseInt(ct, 10, 64)
		if err != nil {
			return meta, fmt.Errorf("commit time %q: %w", ct, err)
		}
		meta.Created = time.Unix(sec, 0).UTC()
	}
	return meta, nil
}

// parsePlatforms reads "linux/amd64,linux/arm64".
func parsePlatforms(s string) ([]v1.Platform, error) {
	var out []v1.Platform
	for _, part := range strings.Split(s, ",") {
		p, err := v1.ParsePlatform(strings.TrimSpace(part))
		if err != nil {
			return nil, err
		}
		if p.OS == "" || p.Architecture == "" {
			return nil, fmt.Errorf("platform %q: want os/arch", part)
		}
		out = append(out, *p)
	}
	return out, nil
}
