// Package standin holds the stand-in programs of the real-node test tier: static binaries
// that hack/e2e packs into container images, so that a real kubelet runs Pods which keep the
// contract the QEMU provisioner's Pod relies on (init container copy, launcher socket, native
// sidecar, exporter config) without Jumpstarter's own images. Each subdirectory is one
// program; launcher is the line protocol they share.
package standin
