// Command images builds the container images of the real-node test tier from the Go
// toolchain alone (go-containerregistry: no container engine, no base image), for the host's
// architecture, and writes one docker-archive tar per image, which
// `ctr -n k8s.io images import FILE` loads:
//
//	go -C hack/e2e run ./images --root REPO --out DIR
//
// It prints the paths it wrote, one a line. Building twice from the same tree gives the
// same bytes.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

func main() {
	root := flag.String("root", ".", "root of the exporterset repository (the main module)")
	out := flag.String("out", "", "directory to write the image archives into")
	flag.Parse()
	if *out == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: images --root REPO --out DIR")
		os.Exit(2)
	}
	paths, err := buildAll(*root, *out, runtime.GOARCH)
	if err != nil {
		fmt.Fprintf(os.Stderr, "images: %v\n", err)
		os.Exit(1)
	}
	for _, p := range paths {
		fmt.Println(p)
	}
}

// buildAll compiles the stand-ins for arch and writes every image of Images into out.
func buildAll(root, out, arch string) ([]string, error) {
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "e2e-images-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	bins, err := compileStandins(root, tmp, arch)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, spec := range Images {
		img, err := spec.build(bins, arch)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", spec.Ref, err)
		}
		path := filepath.Join(out, spec.File)
		if err := writeArchive(path, spec.Ref, img); err != nil {
			return nil, fmt.Errorf("%s: %w", spec.Ref, err)
		}
		paths = append(paths, path)
	}
	return paths, nil
}
