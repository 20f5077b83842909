#!/usr/bin/env bash
# Fails when the production binary links test machinery: envtest (and controller-runtime's
# process and certificate helpers behind it), fake clients, test frameworks, or the project's
# own test machinery: everything under internal/testing/ (the simulator, the soak, the scale
# bench, the e2e tier and their stand-ins), one prefix that a new package cannot slip past.
# The local mode that needs some of it is the separate command cmd/exporterset-dev.
#
# Not forbidden, because libraries the controller needs import them in their non-test code:
# the standard library's `testing` (hashicorp/go-plugin's test helpers live in its main
# package), k8s.io/client-go/testing and apimachinery's testrestmapper (client-go's gentype
# supports fake clients generically).
#
# Usage: hack/check-prod-deps.sh [package]   (default ./cmd/exporterset-controller)
# With no argument it also checks that the check can fail: cmd/exporterset-dev, which links
# envtest and the simulator on purpose, must be caught.
set -euo pipefail
cd "$(dirname "$0")/.."
module=$(go list -m)
forbidden=(
	'^sigs\.k8s\.io/controller-runtime/pkg/envtest(/|$)'
	'^sigs\.k8s\.io/controller-runtime/pkg/internal/testing(/|$)'
	'^sigs\.k8s\.io/controller-runtime/pkg/client/fake(/|$)'
	'^k8s\.io/client-go/kubernetes/fake(/|$)'
	'^github\.com/onsi/(ginkgo|gomega)(/|$)'
	'^github\.com/stretchr/testify(/|$)'
	"^${module//./\\.}/internal/testing/"
)
pattern=$(IFS='|'; echo "${forbidden[*]}")

# check PKG prints the forbidden dependencies of PKG and fails when there are any.
check() {
	local deps bad
	deps=$(go list -deps "$1")
	bad=$(grep -E "$pattern" <<<"$deps" || true)
	if [ -n "$bad" ]; then
		echo "$1 links test machinery:" >&2
		sed 's/^/  /' <<<"$bad" >&2
		return 1
	fi
	echo "$1: $(wc -l <<<"$deps") dependencies, no test machinery"
}

if [ $# -gt 0 ]; then
	check "$1"
	exit
fi
check ./cmd/exporterset-controller
if check ./cmd/exporterset-dev 2>/dev/null; then
	echo "check-prod-deps: the check found nothing in ./cmd/exporterset-dev, which links envtest: the patterns are broken" >&2
	exit 1
fi
echo "check-prod-deps: (and it does catch ./cmd/exporterset-dev, which links envtest on purpose)"
