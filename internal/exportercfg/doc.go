// Package exportercfg owns the ExporterConfig file that `jmp run --exporter-config` takes
// (contract §3): its Go types, [Render] (the bytes the reconciler writes into an instance's
// config Secret) and [Parse], [Config.Check] and [Load] (what an exporter does with the file
// before it tries to reach its controller). The file stays wire-compatible with upstream
// Jumpstarter's exporter.
//
// It knows nothing of Kubernetes, so that the e2e stand-in exporter (a static binary in a
// container) stays small, and the simulator and the stand-in check a config the same way and
// fail with the same words.
package exportercfg
