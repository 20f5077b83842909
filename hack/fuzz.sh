#!/usr/bin/env bash
# Runs every fuzz target of the module for the given time each (default 10s), or the given
# number of executions ("5000x", as CI does: a duration can end in a spurious "context
# deadline exceeded" on Go 1.26, go.dev/issue/75804): go test can fuzz only one target per
# invocation, so this finds them and runs them one by one.
set -euo pipefail
fuzztime=${1:-10s}
cd "$(dirname "$0")/.."
grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r f; do
	pkg=./$(dirname "${f#./}")
	for target in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | cut -d' ' -f2); do
		echo "fuzz: $pkg $target for $fuzztime" >&2
		go test "$pkg" -run='^$' -fuzz="^${target}\$" -fuzztime="$fuzztime"
	done
done
