package provisioner

import (
	"runtime/debug"

	corev1 "k8s.io/api/core/v1"
)

// ImageOr returns img, or fallback when img names no image: the pair is replaced whole,
// never mixed, as the image precedence rule says. An image given without a pull policy gets
// IfNotPresent. Provisioners use it for their WithDefaultImages options.
func ImageOr(img, fallback Image) Image {
	if img.Image == "" {
		return fallback
	}
	if img.PullPolicy == "" {
		img.PullPolicy = corev1.PullIfNotPresent
	}
	return img
}

// module is this repository's module path.
const module = "github.com/exporterset/exporterset"

// ModuleVersion is the version of this module in the running binary (as the main module or a
// dependency), or "(devel)": the version a provisioner built from it reports by default.
func ModuleVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "(devel)"
	}
	if info.Main.Path == module && info.Main.Version != "" {
		return info.Main.Version
	}
	for _, dep := range info.Deps {
		if dep.Path == module && dep.Version != "" {
			return dep.Version
		}
	}
	return "(devel)"
}
