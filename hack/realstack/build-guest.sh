#!/usr/bin/env bash
# Builds the tiny real-stack guest into build/guest/ (git-ignored):
#   vmlinuz        copy of the host's Debian cloud kernel (/boot/vmlinuz-*-cloud-amd64)
#   initramfs.gz   busybox-static, the virtio/ACPI/virtio-scsi modules of that
#                  kernel (hot-plugged disks appear as /dev/sd*), the
#                  host's /usr/sbin/qemu-ga with its libraries, a static memory
#                  dirtier (dirtier.c) and an /init that starts them
# The guest boots by direct kernel boot under TCG, runs the real qemu-ga on the
# virtio-serial port org.qemu.guest_agent.0, powers off on the ACPI power
# button and on the agent's guest-shutdown, and dirties memory when the kernel
# command line says dirty_mb_s=N (MiB/s) [dirty_mb=M (MiB working set, 48)],
# or when /bin/dirtier RATE SIZE is started through the agent's guest-exec.
#
# Cached: rebuilt only when an input (this script, dirtier.c, the kernel, its
# modules, busybox, qemu-ga and its libraries) changes. Output is world-readable
# so QEMU, running as libvirt-qemu, can open it.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${GUEST_DIR:-$root/build/guest}

kernel=${KERNEL:-$(ls /boot/vmlinuz-*-cloud-amd64 2>/dev/null | sort -V | tail -n1 || true)}
if [[ -z $kernel || ! -r $kernel ]]; then
	echo "build-guest.sh: no /boot/vmlinuz-*-cloud-amd64; run hack/realstack/install.sh" >&2
	exit 1
fi
kver=${kernel#*/vmlinuz-}
moddir=/lib/modules/$kver
busybox=/bin/busybox
qga=/usr/sbin/qemu-ga
for f in "$moddir" "$busybox" "$qga"; do
	if [[ ! -e $f ]]; then
		echo "build-guest.sh: $f missing; run hack/realstack/install.sh" >&2
		exit 1
	fi
done
command -v gcc >/dev/null || { echo "build-guest.sh: gcc missing; run hack/realstack/install.sh" >&2; exit 1; }

# Load order matters: insmod does not resolve dependencies.
modules=(virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci
	virtio_console virtio_balloon button evdev failover net_failover virtio_net
	scsi_common scsi_mod sd_mod virtio_scsi)

module_path() {
	local p
	p=$(find "$moddir/kernel" -name "$1.ko" -o -name "$1.ko.xz" -o -name "$1.ko.zst" | head -n1)
	if [[ -z $p ]]; then
		# Built into the kernel: nothing to load.
		grep -q "/$1.ko" "$moddir/modules.builtin" 2>/dev/null && return 0
		echo "build-guest.sh: module $1 not found under $moddir" >&2
		return 1
	fi
	echo "$p"
}

module_files=()
for m in "${modules[@]}"; do
	p=$(module_path "$m")
	[[ -n $p ]] && module_files+=("$p")
done
mapfile -t libs < <(ldd "$qga" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | sort -u)

stamp_inputs() {
	sha256sum "${BASH_SOURCE[0]}" "$here/dirtier.c" "$kernel" "$busybox" "$qga" \
		"${module_files[@]}" "${libs[@]}" | sed "s| .*/| |"
	gcc --version | head -n1
}
stamp=$(stamp_inputs | sha256sum | cut -d' ' -f1)
if [[ -f $out/stamp && $(cat "$out/stamp") == "$stamp" && -f $out/vmlinuz && -f $out/initramfs.gz ]]; then
	echo "build-guest.sh: $out up to date"
	exit 0
fi

echo "build-guest.sh: building guest from $kernel into $out"
mkdir -p "$out"
work=$(mktemp -d "$out/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs
mkdir -p "$rootfs"/{bin,sbin,etc/acpi,proc,sys,dev,run,tmp,var/lib,lib/modules,usr/sbin,usr/bin}
ln -s ../run "$rootfs/var/run"

cp "$busybox" "$rootfs/bin/busybox"
for applet in $("$busybox" --list); do
	[[ $applet == busybox ]] && continue
	ln -sf busybox "$rootfs/bin/$applet"
done

for p in "${module_files[@]}"; do
	name=$(basename "$p")
	case $name in
	*.ko.xz) xz -dc "$p" >"$rootfs/lib/modules/${name%.xz}" ;;
	*.ko.zst) zstd -qdc "$p" >"$rootfs/lib/modules/${name%.zst}" ;;
	*) cp "$p" "$rootfs/lib/modules/$name" ;;
	esac
done

cp "$qga" "$rootfs/usr/sbin/qemu-ga"
for lib in "${libs[@]}"; do
	mkdir -p "$rootfs$(dirname "$lib")"
	cp -L "$lib" "$rootfs$lib"
done

gcc -static -O2 -Wall -Wextra -o "$rootfs/bin/dirtier" "$here/dirtier.c"

cat >"$rootfs/etc/os-release" <<'EOF'
NAME="virtkit tiny guest"
ID=virtkit-tiny
VERSION_ID="1"
PRETTY_NAME="virtkit tiny guest (busybox)"
EOF
echo "root:x:0:0:root:/:/bin/sh" >"$rootfs/etc/passwd"
echo "root:x:0:" >"$rootfs/etc/group"
echo tiny >"$rootfs/etc/hostname"

# qemu-ga's guest-shutdown runs /sbin/shutdown -h -P +0 "...": power off now.
cat >"$rootfs/sbin/shutdown" <<'EOF'
#!/bin/sh
sync
case " $* " in
*" -r "*) exec reboot -f ;;
*) exec poweroff -f ;;
esac
EOF
chmod 755 "$rootfs/sbin/shutdown"

# busybox acpid runs the named file (relative to -c dir) on the ACPI power button.
echo "PWRF power.sh" >"$rootfs/etc/acpid.conf"
printf '#!/bin/sh\nsync\nexec poweroff -f\n' >"$rootfs/etc/acpi/power.sh"
chmod 755 "$rootfs/etc/acpi/power.sh"

cat >"$rootfs/init" <<'EOF'
#!/bin/sh
# PID 1 of the tiny guest. Never exits (that would panic the kernel).
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
hostname -F /etc/hostname
for m in virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci \
	virtio_console virtio_balloon button evdev failover net_failover virtio_net \
	scsi_common scsi_mod sd_mod virtio_scsi; do
	[ -f /lib/modules/$m.ko ] && insmod /lib/modules/$m.ko
done
echo "tiny: modules loaded"

# The first NIC gets QEMU user networking's guest address, so the guest
# agent reports an interface with a MAC and an IP (KubeVirt's status merge).
ip link set lo up
if ip link show eth0 >/dev/null 2>&1; then
	ip link set eth0 up
	ip addr add 10.0.2.15/24 dev eth0
	echo "tiny: eth0 up as 10.0.2.15/24"
fi

acpid -c /etc/acpi -a /etc/acpid.conf -l /run/acpid.log

# The agent's port: the virtio-serial port named org.qemu.guest_agent.0.
port=
i=0
while [ -z "$port" ] && [ $i -lt 100 ]; do
	for n in /sys/class/virtio-ports/*/name; do
		[ -f "$n" ] || continue
		if [ "$(cat "$n")" = org.qemu.guest_agent.0 ]; then
			port=$(basename "$(dirname "$n")")
		fi
	done
	[ -z "$port" ] && { sleep 0.1; i=$((i + 1)); }
done
if [ -n "$port" ]; then
	echo "tiny: guest agent on /dev/$port"
	( while true; do
		qemu-ga -m virtio-serial -p /dev/$port -t /run -f /run/qemu-ga.pid
		sleep 1
	done ) &
else
	echo "tiny: no org.qemu.guest_agent.0 port"
fi

rate=$(sed -n 's/.*dirty_mb_s=\([0-9]*\).*/\1/p' /proc/cmdline)
if [ -n "$rate" ] && [ "$rate" -gt 0 ]; then
	echo "tiny: dirtying $rate MiB/s"
	/bin/dirtier &
fi

echo "tiny: up"
while true; do
	wait
	sleep 1
done
EOF
chmod 755 "$rootfs/init"

(cd "$rootfs" && find . -print0 | LC_ALL=C sort -z |
	cpio --null -o -H newc --quiet -R 0:0) | gzip -6 >"$work/initramfs.gz"
cp "$kernel" "$work/vmlinuz"
chmod 644 "$work/vmlinuz" "$work/initramfs.gz"
mv -f "$work/vmlinuz" "$out/vmlinuz"
mv -f "$work/initramfs.gz" "$out/initramfs.gz"
echo "$stamp" >"$out/stamp"
chmod 755 "$out"
# QEMU runs as libvirt-qemu: every directory up to the guest must be traversable.
d=$out
while [[ $d != / ]]; do
	if [[ $(stat -c %A "$d") != d????????x* ]]; then
		echo "build-guest.sh: warning: $d is not world-traversable; libvirt-qemu cannot read the guest" >&2
	fi
	d=$(dirname "$d")
done
echo "build-guest.sh: $(du -h "$out/initramfs.gz" | cut -f1) initramfs, kernel $kver"
