#!/usr/bin/env bash
# Exercises hack/envtest-bins/build.sh and `make test`'s use of it on the cold path, in seconds:
# Go build cache, module cache, HOME and the binary cache all missing, with a stand-in binary in
# place of the Kubernetes ones (ENVTEST_BINS_SELFTEST). A fresh machine once broke here
# (df on a GOCACHE that did not exist yet) while warm CI machines passed.
set -euo pipefail
cd "$(dirname "$0")/../.."
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fail() { printf 'envtest-bins selftest: FAIL: %s\n' "$*" >&2; exit 1; }

cold_env=(env HOME="$scratch/home" GOCACHE="$scratch/no/such/gocache" GOMODCACHE="$scratch/no/such/gomodcache"
	ENVTEST_BINS_CACHE="$scratch/no/such/bins" XDG_CACHE_HOME= GOFLAGS= GOPROXY="$(go env GOPROXY)")

# 1. A cold build succeeds and prints the directory that holds the binary.
dir=$("${cold_env[@]}" ENVTEST_BINS_SELFTEST=ok hack/envtest-bins/build.sh 2>"$scratch/ok.err") ||
	{ cat "$scratch/ok.err" >&2; fail "cold build failed"; }
[ -x "$dir/selftest" ] || fail "build.sh printed '$dir', which holds no selftest binary"
"$dir/selftest" | grep -q '^selftest v' || fail "the built binary does not report its version"

# 2. A second run finds it and builds nothing.
again=$("${cold_env[@]}" ENVTEST_BINS_SELFTEST=ok hack/envtest-bins/build.sh 2>"$scratch/again.err")
[ "$again" = "$dir" ] || fail "second run printed '$again', want '$dir'"
! grep -q building "$scratch/again.err" || fail "second run rebuilt: $(cat "$scratch/again.err")"

# 3. A failing build exits non-zero with the compiler's own message and prints no directory.
rm -rf "$scratch/no"
if out=$("${cold_env[@]}" ENVTEST_BINS_SELFTEST=fail hack/envtest-bins/build.sh 2>"$scratch/fail.err"); then
	fail "a failing build exited 0 (printed '$out')"
fi
[ -z "$out" ] || fail "a failing build printed a directory: '$out'"
grep -q 'fails on purpose' "$scratch/fail.err" || fail "the compiler's message is missing: $(cat "$scratch/fail.err")"

# 4. `make test` stops on that failure: go test never runs with empty assets.
if "${cold_env[@]}" ENVTEST_BINS_SELFTEST=fail make --no-print-directory test GO_TEST_FLAGS='-run=^$$' >"$scratch/make.out" 2>&1; then
	fail "make test went on after the control-plane build failed: $(cat "$scratch/make.out")"
fi
! grep -qE '^(ok|\?|FAIL)[[:space:]]' "$scratch/make.out" || fail "make test ran go test after the build failed: $(cat "$scratch/make.out")"
grep -q 'fails on purpose' "$scratch/make.out" || fail "make test hid the build's message: $(cat "$scratch/make.out")"
echo "envtest-bins selftest: cold build, cached rerun, failing build and make test's stop all behave"
