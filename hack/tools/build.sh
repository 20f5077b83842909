#!/usr/bin/env bash
# Builds a command-line tool pinned by a wrapper module under hack/tools/<name> (helm, promtool)
# from the Go module proxy, once, into ~/.cache/exporterset/tools/<name>-<key>, where key is a
# hash of the wrapper's go.mod and go.sum. Prints progress on stderr and the binary's path on
# stdout:   helm=$(hack/tools/build.sh helm)
#
# With --check it builds nothing: it prints the path when the binary is there, else exits 3.
# Environment: EXPORTERSET_TOOLS_CACHE, the cache parent (default ~/.cache/exporterset/tools).
set -euo pipefail

check_only=false
[ "${1:-}" = --check ] && { check_only=true; shift; }
name=${1:?usage: hack/tools/build.sh [--check] helm|promtool}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
case $name in
helm) pkg=helm.sh/helm/v4/cmd/helm; probe=(version --short) ;;
promtool) pkg=github.com/prometheus/prometheus/cmd/promtool; probe=(--version) ;;
*) echo "tools: unknown tool '$name' (helm or promtool)" >&2; exit 2 ;;
esac
mod="$here/$name"
key=$(cat "$mod/go.mod" "$mod/go.sum" | sha256sum | cut -c1-16)
cache_root=${EXPORTERSET_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/exporterset/tools}
bin="$cache_root/$name-$key/$name"

if [ -x "$bin" ] && "$bin" "${probe[@]}" >/dev/null 2>&1; then
	echo "$bin"
	exit 0
fi
if $check_only; then
	echo "tools: $name is not built yet ($bin); run hack/tools/build.sh $name" >&2
	exit 3
fi

mkdir -p "$cache_root"
tmp=$(mktemp -d "$cache_root/.build.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "tools: building $name from $pkg (cold: minutes on 2 cores) ..." >&2
start=$(date +%s)
# -mod=mod: the wrapper's go.sum is complete, but the tools.go build tag hides the import
# from the default build list.
(cd "$mod" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags "-s -w" -o "$tmp/$name" "$pkg")
"$tmp/$name" "${probe[@]}" >/dev/null 2>&1 || { echo "tools: $name was built but '$name ${probe[*]}' fails" >&2; exit 1; }
mkdir -p "$(dirname "$bin")"
mv -f "$tmp/$name" "$bin"
echo "tools: built $name in $(($(date +%s) - start))s: $bin" >&2
echo "$bin"
