package exporterset

import (
	"context"

	logf "sigs.k8s.io/controller-runtime/pkg/log"
)

// The steps of a new set's first instance that happen inside this reconciler, logged so
// that the time from a set's create to its first Exporter can be told apart on a real
// cluster (docs/e2e.md prints them beside what a watch sees). The lock's acquisition (the
// gate opening) is logged by the process that holds it, with StepKey "gate opened".
const (
	// StepKey is the log key that names a step.
	StepKey = "step"

	stepFirstPass      = "first pass"
	stepExporterCreate = "Exporter create"
)

// traceFirst logs a step of a set's first instance; ctx carries the set's name.
func traceFirst(ctx context.Context, step string, kv ...any) {
	logf.FromContext(ctx).Info("first instance: "+step, append([]any{StepKey, step}, kv...)...)
}
