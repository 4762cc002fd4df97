#!/usr/bin/env bash
# Installs the Debian packages the real-stack tier and the test suite need:
# libvirt (daemon, client tools, headers for the cgo bindings), QEMU, the
# pieces of the tiny guest (cloud kernel, busybox-static, qemu-guest-agent,
# gcc for the memory dirtier), xmllint for virt-xml-validate, promtool and
# socat, the distribution registry (docker-registry) for image pulls, the
# pod network's tools (iproute2, nftables, dnsmasq), mmdebstrap (with
# e2fsprogs) for the Debian cloud image, vncsnapshot (a real VNC client for
# the VNC stream test), and kubectl (Debian's
# kubernetes-client, unless a kubectl is already on the PATH) for the API
# tests. Idempotent: when every package is already installed it touches
# nothing and returns in well under a second.
#
# QEMU and libvirt come from Debian's bookworm-backports (QEMU 10, libvirt
# 11): Debian 12's QEMU 7.2 loses guest writes made under TCG during a live
# migration (QEMU 9.0 fixed it), so a dirtying guest's real migrations,
# which the real-stack tier and the real benchmark run, need a newer one.
# QEMU 10 no longer ships virtiofsd; the C virtiofsd of Debian 12's QEMU
# 7.2 (which speaks the same vhost-user protocol) is unpacked from its
# package into /usr/local/libexec/virtiofsd, where the node agent looks.
# --distro-qemu keeps Debian 12's QEMU and libvirt (and its virtiofsd).
set -euo pipefail

qemu_backports=1
case ${1:-} in
"") ;;
--distro-qemu) qemu_backports=0 ;;
*)
	echo "install.sh: unknown argument ${1}; usage: install.sh [--distro-qemu]" >&2
	exit 2
	;;
esac

packages=(
	libvirt-dev libvirt-clients libxml2-utils
	libvirt-daemon libvirt-daemon-driver-qemu libvirt-daemon-system
	qemu-system-x86 qemu-system-common qemu-utils
	linux-image-cloud-amd64 busybox-static qemu-guest-agent
	prometheus socat gcc libc6-dev genisoimage openssl
	docker-registry bubblewrap
	iproute2 nftables dnsmasq-base
	mmdebstrap e2fsprogs
	vncsnapshot
)
# The API tests drive the server with a real kubectl; another distribution's
# kubectl (a cloud SDK's) owns /usr/bin/kubectl and would conflict.
if ! command -v kubectl >/dev/null 2>&1; then
	packages+=(kubernetes-client)
fi

if [[ $(id -u) -ne 0 ]]; then
	echo "install.sh: must run as root (apt-get)" >&2
	exit 1
fi

missing=()
for p in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$p" 2>/dev/null || true)
	if [[ $status != ii* ]]; then
		missing+=("$p")
	fi
done

qemu_major=$( (qemu-system-x86_64 --version 2>/dev/null || true) | sed -n 's/^QEMU emulator version \([0-9]*\).*/\1/p')
need_backports=0
if [[ $qemu_backports -eq 1 && ${qemu_major:-0} -lt 9 ]]; then
	need_backports=1
fi

virtiofsd=/usr/local/libexec/virtiofsd
need_virtiofsd=0
# Upgrading to QEMU 10 removes Debian 12's /usr/lib/qemu/virtiofsd.
if [[ $qemu_backports -eq 1 && ! -x $virtiofsd && ! -x /usr/libexec/virtiofsd &&
	($need_backports -eq 1 || ! -x /usr/lib/qemu/virtiofsd) ]]; then
	need_virtiofsd=1
fi

if [[ ${#missing[@]} -eq 0 && $need_backports -eq 0 && $need_virtiofsd -eq 0 ]]; then
	echo "install.sh: all ${#packages[@]} packages present"
	exit 0
fi

echo "install.sh: installing ${missing[*]:-} $([[ $need_backports -eq 1 ]] && echo "QEMU and libvirt from bookworm-backports")"
export DEBIAN_FRONTEND=noninteractive
backports_list=/etc/apt/sources.list.d/virtkit-bookworm-backports.list
if [[ $need_backports -eq 1 && ! -e $backports_list ]]; then
	echo "deb http://deb.debian.org/debian bookworm-backports main" >"$backports_list"
fi
# Another apt/dpkg run (unattended upgrades, a parallel job) holds the lock:
# wait for it instead of failing.
apt_opts=(-y -q -o DPkg::Lock::Timeout=600)
apt-get -q -o DPkg::Lock::Timeout=600 update
# Packages' postinst scripts try to start services; there is no init system
# to start them with, and libvirtd.sh starts the daemons itself.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [[ ! -e $policy ]]; then
	printf '#!/bin/sh\nexit 101\n' >"$policy"
	chmod 755 "$policy"
	created_policy=1
fi
trap 'if [[ $created_policy -eq 1 ]]; then rm -f "$policy"; fi' EXIT
if [[ ${#missing[@]} -gt 0 ]]; then
	apt-get install "${apt_opts[@]}" "${missing[@]}"
fi
if [[ $need_backports -eq 1 ]]; then
	apt-get install "${apt_opts[@]}" -t bookworm-backports \
		qemu-system-x86 qemu-system-common qemu-system-data qemu-utils qemu-guest-agent \
		libvirt-daemon libvirt-daemon-system libvirt-daemon-driver-qemu libvirt-clients libvirt0 libvirt-dev
fi
if [[ $need_virtiofsd -eq 1 ]]; then
	# The newest Debian 12 build of qemu-system-common (not a backport).
	version=$(apt-cache madison qemu-system-common | awk -F'|' '$2 !~ /bpo/ {gsub(/ /, "", $2); print $2; exit}')
	if [[ -z $version ]]; then
		echo "install.sh: no Debian 12 qemu-system-common to take virtiofsd from" >&2
		exit 1
	fi
	tmp=$(mktemp -d)
	(cd "$tmp" && apt-get download -q "qemu-system-common=$version")
	dpkg-deb -x "$tmp"/qemu-system-common_*.deb "$tmp/x"
	install -D -m 755 "$tmp/x/usr/lib/qemu/virtiofsd" "$virtiofsd"
	rm -rf "$tmp"
	echo "install.sh: virtiofsd from qemu-system-common $version in $virtiofsd"
fi
echo "install.sh: done"
