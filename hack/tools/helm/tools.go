//go:build tools

// Package tools records the Helm CLI as a dependency of this wrapper module.
package tools

import _ "helm.sh/helm/v4/cmd/helm"
