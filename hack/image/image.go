package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's fixed shape: one static binary run as an unprivileged numeric user, nothing else
// but what lets that user exist (/etc/passwd, /etc/group, a home) and a writable-by-all /tmp.
const (
	// BinaryPath is where the controller binary sits in the image.
	BinaryPath = "/exporterset-controller"
	// UpstreamBinaryPath is a symbolic link to BinaryPath: the command upstream Jumpstarter's
	// operator gives its exporter-set controller container, so that pointing the operator's
	// image field at this image is enough (README, "Replacing upstream's exporter-set
	// controller"). Its flags without a subcommand run the controller.
	UpstreamBinaryPath = "/exporter-set-controller"
	// User is the image's numeric user and group: non-root, and numeric so that the kubelet can
	// enforce runAsNonRoot without reading /etc/passwd (distroless's "nonroot" ids).
	User = "65532:65532"
	uid  = 65532
)

// Label keys the image carries (OCI annotations, as labels and on the manifests).
const (
	LabelSource   = "org.opencontainers.image.source"
	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
)

// Entrypoint and Cmd: `docker run IMAGE` runs the controller against the cluster it is in.
var (
	Entrypoint = []string{BinaryPath}
	Cmd        = []string{"run"}
)

// Meta is what the image says about where it comes from.
type Meta struct {
	Source   string    // repository URL
	Version  string    // e.g. v0.3.0 or a git describe
	Revision string    // git commit
	Created  time.Time // the commit's time, so that a rebuild of a commit is byte-identical
}

func (m Meta) labels() map[string]string {
	return map[string]string{LabelSource: m.Source, LabelVersion: m.Version, LabelRevision: m.Revision}
}

// file is one entry of a layer.
type file struct {
	name string // without a leading slash; directories end in "/"
	mode int64
	uid  int
	data []byte
	link string // a symbolic link's target; data and mode unused
}

// baseFiles are the same on every platform, so their layer is shared by the manifests.
func baseFiles() []file {
	return []file{
		{name: "etc/", mode: 0o755},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\n")},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: uid},
		{name: "tmp/", mode: 0o1777},
	}
}

// layer makes a gzipped OCI layer of files, every entry stamped with created. It compresses
// once, here; the library reuses the compressed bytes.
func layer(files []file, created time.Time) (v1.Layer, error) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: f.mode, Uid: f.uid, Gid: f.uid, ModTime: created, Format: tar.FormatPAX}
		switch {
		case f.link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, f.link, 0o777
		case f.name[len(f.name)-1] == '/':
			h.Typeflag = tar.TypeDir
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := io.Copy(zw, &raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	b := gz.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil },
		tarball.WithMediaType(types.OCILayer))
}

// Platform is one image of the index: a platform and the controller binary built for it.
type Platform struct {
	v1.Platform
	Binary []byte
}

// NewImage assembles the image of one platform: the shared base layer, then the binary.
func NewImage(base v1.Layer, p Platform, meta Meta) (v1.Image, error) {
	bin, err := layer([]file{
		{name: BinaryPath[1:], mode: 0o755, data: p.Binary},
		{name: UpstreamBinaryPath[1:], link: BinaryPath[1:]},
	}, meta.Created)
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	hist := func(what string) v1.History {
		return v1.History{Created: v1.Time{Time: meta.Created}, CreatedBy: "hack/image: " + what}
	}
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: base, History: hist("/etc/passwd, /etc/group, /home/nonroot, /tmp")},
		mutate.Addendum{Layer: bin, History: hist(BinaryPath + ", " + UpstreamBinaryPath + " -> " + BinaryPath[1:])})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Variant = p.OS, p.Architecture, p.Variant
	cf.Created = v1.Time{Time: meta.Created}
	cf.Config.User = User
	cf.Config.Entrypoint = Entrypoint
	cf.Config.Cmd = Cmd
	cf.Config.WorkingDir = "/"
	cf.Config.Env = []string{"HOME=/home/nonroot"}
	cf.Config.Labels = meta.labels()
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return nil, err
	}
	return mutate.Annotations(img, meta.labels()).(v1.Image), nil
}

// NewIndex assembles the multi-platform image: one OCI index, one manifest per platform.
func NewIndex(platforms []Platform, meta Meta) (v1.ImageIndex, error) {
	base, err := layer(baseFiles(), meta.Created)
	if err != nil {
		return nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, p := range platforms {
		img, err := NewImage(base, p, meta)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", platformString(p.Platform), err)
		}
		plat := p.Platform
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &plat}})
	}
	return mutate.Annotations(idx, meta.labels()).(v1.ImageIndex), nil
}

func platformString(p v1.Platform) string {
	s := p.OS + "/" + p.Architecture
	if p.Variant != "" {
		s += "/" + p.Variant
	}
	return s
}
