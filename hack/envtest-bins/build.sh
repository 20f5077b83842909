#!/usr/bin/env bash
# Builds the control-plane binaries the tests and `dev` mode use (etcd, kube-apiserver, kubectl,
# kube-controller-manager) from the Go module proxy, once, into a cache directory keyed by the
# wrapper modules' go.mod/go.sum. setup-envtest's download needs the internet; this does not.
#
# Prints progress on stderr and the directory holding the binaries on stdout, so callers can do
#   KUBEBUILDER_ASSETS=$(hack/envtest-bins/build.sh)
#
# Environment:
#   ENVTEST_BINS_CACHE  parent of the cache directories (default ~/.cache/exporterset/envtest-bins)
#   ENVTEST_BINS_ONLY   space-separated binaries to require (default: etcd kube-apiserver kubectl,
#                       what the tests use; `make bench-scale` adds kube-controller-manager)
#   ENVTEST_BINS_SELFTEST=ok|fail  build only a tiny stand-in binary (`selftest`) through the same
#                       steps, so CI can exercise the cold path in seconds (hack/envtest-bins/selftest.sh)
#
# With --check it builds nothing: it prints the directory when the binaries are there, else
# exits 3 (the tests use this to fail with a clear message instead of building for minutes).
set -euo pipefail

check_only=false
[ "${1:-}" = --check ] && check_only=true

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
k8s_version=v1.37.2
etcd_version=3.7.3
want=${ENVTEST_BINS_ONLY:-"etcd kube-apiserver kubectl"}
selftest=${ENVTEST_BINS_SELFTEST:-}
[ -n "$selftest" ] && want=selftest

log() { printf 'envtest-bins: %s\n' "$*" >&2; }

key=$(cat "$here"/kube/go.mod "$here"/kube/go.sum "$here"/etcd/go.mod "$here"/etcd/go.sum | sha256sum | cut -c1-16)
cache_root=${ENVTEST_BINS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/exporterset/envtest-bins}
dir="$cache_root/$key"

# version_ok NAME: the binary exists and reports the version we build.
version_ok() {
	local bin="$dir/$1" out
	[ -x "$bin" ] || return 1
	case $1 in
	etcd) out=$("$bin" --version 2>/dev/null) && grep -q "etcd Version: $etcd_version" <<<"$out" ;;
	kubectl) out=$("$bin" version --client 2>/dev/null) && grep -q "$k8s_version" <<<"$out" ;;
	selftest) out=$("$bin" 2>/dev/null) && grep -q "selftest $k8s_version" <<<"$out" ;;
	*) out=$("$bin" --version 2>/dev/null) && grep -q "$k8s_version" <<<"$out" ;;
	esac
}

missing=()
for b in $want; do version_ok "$b" || missing+=("$b"); done
if [ ${#missing[@]} -eq 0 ]; then
	echo "$dir"
	exit 0
fi
if $check_only; then
	log "missing or stale in $dir: ${missing[*]}"
	exit 3
fi

command -v go >/dev/null || { log "go is not on PATH: install Go (see go.mod for the version)"; exit 1; }

# existing_dir PATH: PATH or its nearest existing ancestor. On a fresh machine the Go caches do
# not exist yet, and df on a missing path fails; the disk they will land on is what matters.
existing_dir() {
	local d=$1
	while [ ! -d "$d" ]; do d=$(dirname "$d"); done
	printf '%s\n' "$d"
}

# A cold build of the Kubernetes binaries needs about 4 GB of module and build cache.
if [ -z "$selftest" ]; then
	gocache=$(go env GOCACHE) || { log "go env GOCACHE failed"; exit 1; }
	free_kb=$(df -Pk "$(existing_dir "$gocache")" | awk 'NR==2 {print $4}') || free_kb=
	if [ -n "$free_kb" ] && [ "$free_kb" -lt $((5 * 1024 * 1024)) ]; then
		log "only $((free_kb / 1024)) MiB free for the Go build cache ($gocache); building ${missing[*]} needs about 5 GiB. Free some disk and retry."
		exit 1
	fi
fi

mkdir -p "$cache_root"
tmp=$(mktemp -d "$cache_root/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

kube_ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
	kube_ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=37"
	kube_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

export CGO_ENABLED=0 GOFLAGS=-mod=mod
start=$(date +%s)
for b in "${missing[@]}"; do
	log "building $b (cold, with empty Go caches: minutes per binary on 2 cores) ..."
	case $b in
	selftest) (cd "$here/selftest" && go build -trimpath -ldflags "-X main.version=$k8s_version" -o "$tmp/selftest" "./$selftest") ;;
	etcd) (cd "$here/etcd" && go build -trimpath -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3) ;;
	*) (cd "$here/kube" && go build -trimpath -ldflags "$kube_ldflags" -o "$tmp/$b" "k8s.io/kubernetes/cmd/$b") ;;
	esac
	log "built $b ($(($(date +%s) - start))s so far)"
done

mkdir -p "$dir"
for b in "${missing[@]}"; do mv -f "$tmp/$b" "$dir/$b"; done
for b in "${missing[@]}"; do
	version_ok "$b" || { log "$b was built but does not report the expected version"; exit 1; }
done
log "ready in $dir"
echo "$dir"
