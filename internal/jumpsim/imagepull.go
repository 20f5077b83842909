package jumpsim

import (
	"fmt"
	"strings"
)

// Image pull wording, as the kubelet reports it in a waiting container's state.
const (
	reasonErrImagePull     = "ErrImagePull"
	reasonImagePullBackOff = "ImagePullBackOff"
)

// normalizeImage qualifies an image reference as containerd does before pulling: a default
// registry (docker.io), the library/ namespace for official images, and the latest tag.
func normalizeImage(image string) string {
	name, digest, hasDigest := strings.Cut(image, "@")
	first, _, hasSlash := strings.Cut(name, "/")
	if !hasSlash || (!strings.ContainsAny(first, ".:") && first != "localhost") {
		if !hasSlash {
			name = "library/" + name
		}
		name = "docker.io/" + name
	}
	if hasDigest {
		return name + "@" + digest
	}
	if i := strings.LastIndex(name, ":"); i < 0 || strings.Contains(name[i:], "/") {
		name += ":latest"
	}
	return name
}

// notFoundPullMessage is containerd's error for an image whose tag the registry does not
// have, as the kubelet passes it on (the gRPC status message).
func notFoundPullMessage(image string) string {
	ref := normalizeImage(image)
	return fmt.Sprintf("failed to pull and unpack image %q: failed to resolve reference %q: %s: not found", ref, ref, ref)
}

// pullBackOffMessage is the kubelet's message while it waits to pull an image again.
func pullBackOffMessage(image, lastError string) string {
	return fmt.Sprintf("Back-off pulling image %q: %s: %s", image, reasonErrImagePull, lastError)
}
