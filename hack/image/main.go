// Command image builds the controller's container image from the Go toolchain alone, with
// go-containerregistry: no container engine, no base image pulled. It is its own module so
// that the library's go.mod does not carry the image tooling.
//
//	image build  --root DIR --out DIR   compile for each platform; write an OCI layout (one
//	                                    multi-platform index) and one docker archive per platform
//	image verify --layout DIR           read the layout back and check it (user, entrypoint,
//	                                    platforms, labels, no shell, static binary, `version` runs)
//
// `make image` runs both; see docs/image.md.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
)

const defaultPlatforms = "linux/amd64,linux/arm64"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: image build|verify [flags] (-h for the flags)")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = buildCommand(os.Args[2:])
	case "verify":
		err = verifyCommand(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: want build or verify", os.Args[1])
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

func buildCommand(args []string) error {
	fs := flag.NewFlagSet("image build", flag.ExitOnError)
	root := fs.String("root", "../..", "Root of the main module (a git checkout: the version, revision and time come from it).")
	pkg := fs.String("package", "./cmd/exporterset-controller", "The controller's main package, relative to --root.")
	out := fs.String("out", "../../bin/image", "Output directory: oci/ (the OCI layout) and exporterset-controller-<os>-<arch>.tar.")
	repo := fs.String("name", "ghcr.io/exporterset/exporterset-controller", "Image name (without tag); the tag is the version.")
	platforms := fs.String("platforms", defaultPlatforms, "Comma-separated os/arch list.")
	var meta Meta
	fs.StringVar(&meta.Version, "version", "", "Version (label, tag, `version` output). Default: git describe --tags --always --dirty.")
	fs.StringVar(&meta.Revision, "revision", "", "Revision (label, `version` output). Default: git rev-parse HEAD.")
	fs.StringVar(&meta.Source, "source", "https://github.com/exporterset/exporterset", "Source repository URL (label).")
	_ = fs.Parse(args)
	start := time.Now()
	plats, err := parsePlatforms(*platforms)
	if err != nil {
		return err
	}
	if meta, err = gitMeta(*root, meta); err != nil {
		return err
	}
	ref, err := name.NewTag(*repo + ":" + meta.Version)
	if err != nil {
		return err
	}
	binDir := filepath.Join(*out, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		return err
	}
	bins, err := compileAll(*root, *pkg, binDir, plats, meta)
	if err != nil {
		return err
	}
	idx, err := NewIndex(bins, meta)
	if err != nil {
		return err
	}
	dir := filepath.Join(*out, "oci")
	if err := writeLayout(dir, idx, ref); err != nil {
		return err
	}
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	// The archives are written from the layout just written, as a user would load them.
	written, err := readLayout(dir)
	if err != nil {
		return err
	}
	archives, err := writeArchives(*out, written, ref)
	if err != nil {
		return err
	}
	fmt.Printf("image: %s (%s, version %s, revision %s) in %s\n", ref, *platforms, meta.Version, meta.Revision, time.Since(start).Round(100*time.Millisecond))
	fmt.Printf("  OCI layout: %s (index %s)\n", dir, digest)
	for _, a := range archives {
		fmt.Printf("  archive:    %s\n", a)
	}
	return nil
}

func verifyCommand(args []string) error {
	fs := flag.NewFlagSet("image verify", flag.ExitOnError)
	dir := fs.String("layout", "../../bin/image/oci", "The OCI layout `image build` wrote.")
	platforms := fs.String("platforms", defaultPlatforms, "Comma-separated os/arch list the index must hold, and only these.")
	var w Want
	fs.StringVar(&w.Version, "version", "", "Expected version label and `version` output (default: any, but label and binary must agree).")
	fs.StringVar(&w.Revision, "revision", "", "Expected revision label (default: any, but label and binary must agree).")
	noRun := fs.Bool("no-run", false, "Do not run the binary of this machine's platform.")
	_ = fs.Parse(args)
	var err error
	if w.Platforms, err = parsePlatforms(*platforms); err != nil {
		return err
	}
	w.Run = !*noRun
	idx, err := readLayout(*dir)
	if err != nil {
		return err
	}
	if err := Verify(idx, w); err != nil {
		return fmt.Errorf("%s is not the image we ship:\n%w", *dir, err)
	}
	fmt.Printf("image-verify: %s holds %s: user %s, entrypoint %q %q, labels set, no shell, static binaries\n",
		*dir, *platforms, User, Entrypoint, Cmd)
	return nil
}
