//go:build tools

// Package tools records promtool as a dependency of this wrapper module.
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
