package merge

import (
	"fmt"

	"dario.cat/mergo"
)

// Image is one container image choice: a reference and its pull policy.
type Image struct {
	Image      string
	PullPolicy string
}

// Images holds one Image per container role.
type Images struct {
	Exporter, Runtime *Image
}

// ResolveImages picks the image for each container role. For every role
// independently, the first present choice wins as a whole pair:
//
//  1. the ExporterSet's {image, pullPolicy} (set),
//  2. else the VirtualTargetClass's pair (class),
//  3. else the provisioner default (defaults).
//
// Pairs are never mixed field by field, because a pull policy is chosen for a
// specific image (e.g. Never for a preloaded one) and would be wrong for
// another. Two exceptions keep the choice usable:
//
//   - A pair with an empty Image is treated as absent, since a pull policy
//     alone names nothing to run.
//   - A chosen pair with an empty PullPolicy takes the pull policy of the
//     default image for that role, so the provisioner's policy (which reflects
//     how it ships images) applies instead of the kubelet's tag-based guess.
//
// class and set may be nil, as may any role in them. A role is nil in the
// result only if it is nil in defaults and no override provides it; a
// default with an empty Image is still returned, as there is nothing to fall
// back to. The result never shares a pointer with any input.
func ResolveImages(defaults Images, class, set *Images) Images {
	var c, s Images
	if class != nil {
		c = *class
	}
	if set != nil {
		s = *set
	}
	return Images{
		Exporter: resolveImage(defaults.Exporter, c.Exporter, s.Exporter),
		Runtime:  resolveImage(defaults.Runtime, c.Runtime, s.Runtime),
	}
}

// resolveImage applies the precedence of ResolveImages to one role and
// returns a freshly allocated Image.
func resolveImage(def, class, set *Image) *Image {
	var chosen Image
	switch {
	case present(set):
		chosen = *set
	case present(class):
		chosen = *class
	case def != nil:
		chosen = *def
	default:
		return nil
	}
	if def != nil {
		// Without WithOverride mergo only fills empty fields of chosen, and
		// the source has only PullPolicy set, so this fills exactly an
		// empty pull policy and never touches the image reference.
		if err := mergo.Merge(&chosen, Image{PullPolicy: def.PullPolicy}); err != nil {
			// Merging two values of the same struct type cannot fail.
			panic(fmt.Sprintf("merge: filling default pull policy: %v", err))
		}
	}
	return &chosen
}

// present reports whether img names an image; an override without an image
// reference is as good as no override.
func present(img *Image) bool { return img != nil && img.Image != "" }
