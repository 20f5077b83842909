#!/usr/bin/env bash
# The baremetal provisioner's lab test (provisioners/baremetal) runs real sshd hosts in
# network namespaces and real QEMU. As root, install what it needs from Debian when missing;
# otherwise say that it will skip. Never fails the caller: the test skips without them.
set -u
need=()
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v ssh-keygen >/dev/null 2>&1 || need+=(openssh-client)
command -v qemu-system-x86_64 >/dev/null 2>&1 || need+=(qemu-system-x86)
command -v ip >/dev/null 2>&1 || need+=(iproute2)
[ ${#need[@]} -eq 0 ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
	echo "lab-deps: ${need[*]} missing and not installable here (root and apt-get needed): the baremetal lab test will skip" >&2
	exit 0
fi
echo "lab-deps: installing ${need[*]} from Debian for the baremetal lab test" >&2
{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null; } ||
	echo "lab-deps: installing ${need[*]} failed: the baremetal lab test will skip" >&2
exit 0
