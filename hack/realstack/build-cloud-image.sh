#!/usr/bin/env bash
# Builds a Debian 12 (bookworm) cloud guest from Debian's packages into
# build/cloud-image/ (git-ignored):
#   disk.qcow2   ext4 root file system (no partition table, label
#                virtkit-root): systemd, cloud-init (NoCloud and ConfigDrive
#                only), qemu-guest-agent, openssh-server, the cloud kernel,
#                stress-ng (the live-migration benchmark's memory workload)
#   vmlinuz      the guest's kernel  } booted by libvirt's direct kernel boot
#   initrd.img   its initramfs       } (root=LABEL=virtkit-root), no bootloader
#   stamp        hash of the inputs this build came from
#
# Cached: rebuilt only when this script (which holds the package list and
# every configuration file) changes, or when the image files are missing.
# Set CLOUD_IMAGE_REBUILD=1 to force a rebuild (e.g. for security updates).
# Output is world-readable so QEMU, running as libvirt-qemu, can open it.
#
# Needs root (mmdebstrap's root mode, chroot), mmdebstrap, e2fsprogs and
# qemu-utils (hack/realstack/install.sh) and access to deb.debian.org.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${CLOUD_IMAGE_DIR:-$root/build/cloud-image}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
size=${CLOUD_IMAGE_SIZE:-2G}

# What goes into the guest. Part of the stamp (this file is hashed).
packages=(
	systemd systemd-sysv udev dbus
	linux-image-cloud-amd64 initramfs-tools zstd
	cloud-init qemu-guest-agent openssh-server
	sudo iproute2 ca-certificates
	stress-ng
)

if [[ $(id -u) -ne 0 ]]; then
	echo "build-cloud-image.sh: must run as root (mmdebstrap root mode)" >&2
	exit 1
fi
for tool in mmdebstrap mkfs.ext4 qemu-img; do
	command -v "$tool" >/dev/null || {
		echo "build-cloud-image.sh: $tool missing; run hack/realstack/install.sh" >&2
		exit 1
	}
done

stamp=$( (sha256sum <"${BASH_SOURCE[0]}"; echo "$size") | sha256sum | cut -d' ' -f1)
if [[ ${CLOUD_IMAGE_REBUILD:-0} != 1 && -f $out/stamp && $(cat "$out/stamp") == "$stamp" &&
	-f $out/disk.qcow2 && -f $out/vmlinuz && -f $out/initrd.img ]]; then
	echo "build-cloud-image.sh: $out up to date"
	exit 0
fi

start=$(date +%s)
echo "build-cloud-image.sh: building Debian 12 cloud image into $out"
mkdir -p "$out"
chmod 755 "$out"
work=$(mktemp -d "$out/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs

# Configuration written into the tree before the image is made. Runs as a
# mmdebstrap customize hook: $1 is the root directory.
cat >"$work/customize.sh" <<'HOOK'
#!/bin/sh
set -eu
r=$1
# cloud-init: only the datasources virtkit provides; short host keys
# (RSA generation is slow under software emulation); the C.UTF-8 locale,
# which needs neither the locales package nor locale-gen.
cat >"$r/etc/cloud/cloud.cfg.d/90-virtkit.cfg" <<'EOF'
datasource_list: [ NoCloud, ConfigDrive ]
ssh_genkeytypes: [ ed25519, ecdsa ]
locale: C.UTF-8
EOF
echo LANG=C.UTF-8 >"$r/etc/default/locale"
# The root file system, found by label (the disk may be vda, sda, ...).
echo 'LABEL=virtkit-root / ext4 defaults,errors=remount-ro 0 1' >"$r/etc/fstab"
# Per-instance identity comes at first boot: machine-id, host name, host keys.
: >"$r/etc/machine-id"
rm -f "$r/var/lib/dbus/machine-id" "$r/etc/hostname" "$r"/etc/ssh/ssh_host_*
echo localhost >"$r/etc/hostname"
# Networking: systemd-networkd renders cloud-init's network config (DHCP on
# the first NIC by default). Do not wait long for a network that has no DHCP.
chroot "$r" systemctl enable systemd-networkd.service >/dev/null 2>&1
mkdir -p "$r/etc/systemd/system/systemd-networkd-wait-online.service.d"
cat >"$r/etc/systemd/system/systemd-networkd-wait-online.service.d/virtkit.conf" <<'EOF'
[Service]
ExecStart=
ExecStart=/lib/systemd/systemd-networkd-wait-online --any --timeout=20
EOF
# Boot time under TCG: no graphical target, nothing periodic, nothing the
# guest does not need.
chroot "$r" systemctl set-default multi-user.target >/dev/null 2>&1
for u in apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer e2scrub_reap.service \
	fstrim.timer man-db.timer dpkg-db-backup.timer; do
	chroot "$r" systemctl disable "$u" >/dev/null 2>&1 || true
done
# A small initramfs: only the modules of virtio, SCSI and IDE disks and
# CD-ROMs. Whatever holds the cloud-init data must exist before the real
# root's first udev run: cloud-init's ds-identify looks for it (blkid) in a
# systemd generator. (The cloud kernel has no AHCI driver: SATA disks on a
# q35 machine stay invisible to this guest.)
sed -i 's/^MODULES=.*/MODULES=list/' "$r/etc/initramfs-tools/initramfs.conf"
cat >>"$r/etc/initramfs-tools/modules" <<'EOF'
virtio_pci
virtio_blk
virtio_scsi
sd_mod
sr_mod
ata_piix
EOF
chroot "$r" update-initramfs -u -k all >/dev/null
HOOK
chmod 755 "$work/customize.sh"

mmdebstrap --variant=minbase --mode=root --format=directory \
	--aptopt='APT::Install-Recommends "false"' \
	--dpkgopt='path-exclude=/usr/share/doc/*' \
	--dpkgopt='path-include=/usr/share/doc/*/copyright' \
	--dpkgopt='path-exclude=/usr/share/man/*' \
	--dpkgopt='path-exclude=/usr/share/info/*' \
	--dpkgopt='path-exclude=/usr/share/locale/*' \
	--dpkgopt='path-include=/usr/share/locale/locale.alias' \
	--include="$(
		IFS=,
		echo "${packages[*]}"
	)" \
	--customize-hook="$work/customize.sh \"\$1\"" \
	bookworm "$rootfs" \
	"deb $mirror bookworm main" \
	"deb $mirror bookworm-updates main" \
	"deb $security bookworm-security main"

kernel=$(ls "$rootfs"/boot/vmlinuz-* | sort -V | tail -n1)
initrd=$rootfs/boot/initrd.img-${kernel#*/vmlinuz-}
cp "$kernel" "$work/vmlinuz"
cp "$initrd" "$work/initrd.img"

# The file system straight from the tree (no loop device, no mount), then
# qcow2 (sparse: only written blocks take space).
mkfs.ext4 -q -L virtkit-root -E root_owner=0:0 -d "$rootfs" "$work/root.raw" "$size"
qemu-img convert -f raw -O qcow2 "$work/root.raw" "$work/disk.qcow2"
chmod 644 "$work/vmlinuz" "$work/initrd.img" "$work/disk.qcow2"
mv -f "$work/vmlinuz" "$out/vmlinuz"
mv -f "$work/initrd.img" "$out/initrd.img"
mv -f "$work/disk.qcow2" "$out/disk.qcow2"
echo "$stamp" >"$out/stamp"
echo "build-cloud-image.sh: built in $(($(date +%s) - start)) s:" \
	"disk $(du -h "$out/disk.qcow2" | cut -f1), kernel ${kernel#*/vmlinuz-}," \
	"initrd $(du -h "$out/initrd.img" | cut -f1)"
