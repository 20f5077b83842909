package main

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// created stamps every image, layer entry and history record: fixed, so that a rebuild of
// the same tree is byte-identical.
var created = time.Unix(0, 0).UTC()

// entry is one file or directory of a layer.
type entry struct {
	name string // without a leading slash; directories end in "/"
	mode int64
	uid  int
	data []byte
}

// baseEntries let the images' numeric users exist and give them a writable /tmp.
func baseEntries() []entry {
	return []entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/passwd", mode: 0o644, data: []byte("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\npause:x:65535:65535:pause:/:/sbin/nologin\n")},
		{name: "etc/group", mode: 0o644, data: []byte("root:x:0:\nnonroot:x:65532:\npause:x:65535:\n")},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: 65532},
		{name: "tmp/", mode: 0o1777},
	}
}

// binEntries installs the binaries at their paths, with their parent directories, sorted.
func binEntries(bins map[string]string, built map[string][]byte) ([]entry, error) {
	dirs := map[string]bool{}
	var out []entry
	for p, bin := range bins {
		data, ok := built[bin]
		if !ok {
			return nil, fmt.Errorf("no stand-in %q for %s", bin, p)
		}
		out = append(out, entry{name: p, mode: 0o755, data: data})
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			dirs[d+"/"] = true
		}
	}
	for d := range dirs {
		out = append(out, entry{name: d, mode: 0o755})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out, nil
}

// layer makes an uncompressed layer of entries; the archive holds layers as they are.
func layer(entries []entry) (v1.Layer, error) {
	var raw bytes.Buffer
	tw := tar.NewWriter(&raw)
	for _, e := range entries {
		h := &tar.Header{Name: e.name, Mode: e.mode, Uid: e.uid, Gid: e.uid, ModTime: created, Format: tar.FormatPAX}
		if strings.HasSuffix(e.name, "/") {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	b := raw.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil })
}

// build assembles the image of s for arch from the compiled stand-ins.
func (s Spec) build(built map[string][]byte, arch string) (v1.Image, error) {
	base, err := layer(baseEntries())
	if err != nil {
		return nil, err
	}
	binFiles, err := binEntries(s.Bins, built)
	if err != nil {
		return nil, err
	}
	bins, err := layer(binFiles)
	if err != nil {
		return nil, err
	}
	hist := func(what string) v1.History {
		return v1.History{Created: v1.Time{Time: created}, CreatedBy: "hack/e2e/images: " + what}
	}
	img, err := mutate.Append(empty.Image,
		mutate.Addendum{Layer: base, History: hist("/etc/passwd, /etc/group, /home/nonroot, /tmp")},
		mutate.Addendum{Layer: bins, History: hist("stand-in binaries")})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", arch
	cf.Created = v1.Time{Time: created}
	cf.Config.User = s.User
	cf.Config.Entrypoint = s.Entrypoint
	cf.Config.Cmd = s.Cmd
	cf.Config.Env = []string{envPath}
	cf.Config.WorkingDir = "/"
	return mutate.ConfigFile(img, cf)
}

// writeArchive writes img as a docker-archive tarball tagged ref.
func writeArchive(file, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref, name.StrictValidation)
	if err != nil {
		return err
	}
	return tarball.WriteToFile(file, tag, img)
}
