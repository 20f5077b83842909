package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// writeLayout replaces dir with an OCI image layout holding idx, tagged ref's tag (the
// org.opencontainers.image.ref.name annotation, which `skopeo copy oci:DIR:TAG` selects).
func writeLayout(dir string, idx v1.ImageIndex, ref name.Tag) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	return p.AppendIndex(idx, layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": ref.TagStr()}))
}

// readLayout returns the index that writeLayout wrote into dir.
func readLayout(dir string) (v1.ImageIndex, error) {
	outer, err := layout.ImageIndexFromPath(dir)
	if err != nil {
		return nil, err
	}
	m, err := outer.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) != 1 {
		return nil, fmt.Errorf("%s: index.json lists %d entries, want the one image index", dir, len(m.Manifests))
	}
	return outer.ImageIndex(m.Manifests[0].Digest)
}

// writeArchives writes one docker-archive tarball per platform of idx into dir, tagged ref:
// `docker load` and `podman load` take these whatever their version (one platform each, as a
// local image store holds one).
func writeArchives(dir string, idx v1.ImageIndex, ref name.Tag) ([]string, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, d := range m.Manifests {
		if d.Platform == nil {
			return nil, fmt.Errorf("manifest %s has no platform", d.Digest)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, "exporterset-controller-"+strings.ReplaceAll(platformString(*d.Platform), "/", "-")+".tar")
		if err := tarball.WriteToFile(path, ref, img); err != nil {
			return nil, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}
