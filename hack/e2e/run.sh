#!/usr/bin/env bash
# `make e2e`: the real-node tier. Installs what it needs (containerd, runc, the CNI plugins,
# Prometheus and Alertmanager from Debian, when missing), builds helm (cached, for the alert
# rules), the control-plane and node binaries (cached), the stand-in images, the KVM device
# plugin and the controller image, then runs the tests in internal/testing/e2e, which start
# the node under /tmp/exporterset-e2e and stop it at the end. A teardown runs afterwards
# whatever happened to the tests. Needs root.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
work=${E2E_WORK:-$root/bin/e2e}
log() { printf 'e2e: %s\n' "$*" >&2; }

[ "$(id -u)" = 0 ] || { log "needs root (it runs containerd and a kubelet)"; exit 1; }

missing=()
for cmd in containerd:containerd runc:runc ctr:containerd ip:iproute2; do
	command -v "${cmd%%:*}" >/dev/null 2>&1 || missing+=("${cmd#*:}")
done
[ -x /usr/lib/cni/bridge ] && [ -x /usr/lib/cni/host-local ] || missing+=(containernetworking-plugins)
if [ ${#missing[@]} -gt 0 ]; then
	log "installing ${missing[*]} from Debian"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(printf '%s\n' "${missing[@]}" | sort -u) >/dev/null
fi

# Prometheus and Alertmanager (Debian's) for the alerts scenario (alerts_test.go), which runs
# them as its own host processes. A package's postinst may start its service: stop what this
# install started (where policy-rc.d forbids starting, as in containers, nothing runs).
monitoring=()
command -v prometheus >/dev/null 2>&1 || monitoring+=(prometheus)
command -v prometheus-alertmanager >/dev/null 2>&1 || monitoring+=(prometheus-alertmanager)
if [ ${#monitoring[@]} -gt 0 ]; then
	log "installing ${monitoring[*]} from Debian"
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${monitoring[@]}" >/dev/null
	for svc in "${monitoring[@]}"; do
		if [ -x "/etc/init.d/$svc" ] && "/etc/init.d/$svc" status >/dev/null 2>&1; then
			log "stopping the $svc service its package started"
			"/etc/init.d/$svc" stop >/dev/null 2>&1 || true
		fi
	done
fi

assets=$(ENVTEST_BINS_ONLY="etcd kube-apiserver kubectl kube-controller-manager kube-scheduler kubelet" hack/envtest-bins/build.sh)

log "the image builder's and device plugin's own tests (hack/e2e)"
go -C hack/e2e vet ./...
go -C hack/e2e test -count=1 ./...

log "stand-in images and the KVM device plugin"
rm -rf "$work/images"
mkdir -p "$work/images"
go -C hack/e2e run ./images --root "$root" --out "$work/images" >/dev/null
go -C hack/e2e build -o "$work/kvm-device-plugin" ./kvmplugin

log "the controller image (this machine's platform)"
make --no-print-directory image IMAGE_PLATFORMS="linux/$(go env GOARCH)" >/dev/null

# The alerts scenario loads the chart's rules as `helm template` renders them.
helm=$(hack/tools/build.sh helm)

trap 'go run ./internal/testing/e2e/teardown' EXIT
log "tests (logs of the node's daemons in $work/logs)"
# -parallel: the alerts scenario runs its five failures side by side (the default is GOMAXPROCS).
KUBEBUILDER_ASSETS="$assets" E2E_WORK="$work" E2E_HELM="$helm" go test -tags e2e -count=1 -parallel 8 -timeout "${E2E_TIMEOUT:-30m}" -v ${E2E_RUN:+-run "$E2E_RUN"} ./internal/testing/e2e/
