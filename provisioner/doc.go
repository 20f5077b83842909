// Package provisioner defines the contract between the ExporterSet reconciler and the backends
// that turn an instance into a running Pod: the Provisioner interface, the Request every call
// receives, typed errors the reconciler maps to conditions and retries, and a Registry of
// provisioners by name (e.g. "qemu.jumpstarter.dev").
//
// A provisioner renders and validates; it decides nothing about Kubernetes bookkeeping. The
// reconciler owns the lifecycle: it names, labels and owns the Pod a provisioner renders,
// writes the exporter config Secret the Pod mounts, and deletes what it retires. Built-in
// provisioners implement the interface in process; out-of-process plugins are reached through
// a client that implements the same interface, so the reconciler cannot tell them apart.
//
// Every method takes one *Request, so the interface can grow fields without breaking plugins.
package provisioner
