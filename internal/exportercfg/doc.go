// Package exportercfg reads the ExporterConfig file that `jmp run --exporter-config` takes
// (contract §3.3) and checks its form: the fields an exporter needs before it can try to reach
// its controller. It knows nothing of Kubernetes, so that the e2e stand-in exporter (a static
// binary in a container) and the simulator check a config the same way and fail with the
// same words.
package exportercfg
