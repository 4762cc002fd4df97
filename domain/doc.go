// Package domain turns a VirtualMachineInstance into a libvirt domain
// definition (*libvirtxml.Domain), following KubeVirt's converter for the
// subset virtkit supports: the node agent defines the result on a
// hypervisor, `virtkit render` prints it.
//
// [Build] is pure and deterministic: the same VMI and [Options] give the
// same document, byte for byte, and Build itself does no I/O. Everything
// that touches the host goes through small interfaces in Options:
//
//   - a [VolumeResolver] maps volumes to host files or block devices
//     ([DirResolver] lays them out under a working directory and, with
//     Create set, makes the qcow2 overlays, empty disks, cloud-init and config ISOs
//     the domain needs; both are written in pure Go);
//   - a [KernelResolver] maps firmware.kernelBoot.container to a host
//     kernel and initrd;
//   - a [NetworkResolver] maps interfaces to user-mode networking, a
//     libvirt network, a bridge, a tap device or an SR-IOV function
//     ([NetResolver]);
//   - a [ConfigResolver] supplies the keys of configMap, secret,
//     serviceAccount and sysprep volumes (and cloud-init secretRefs), which
//     become read-only ISO disks as KubeVirt presents them ([StaticConfig]
//     serves fixed content; a node agent reads its store).
//
// Volumes named in devices.filesystems are shared over virtiofs instead:
// the domain gets shared memfd memory and a <filesystem> per share on the
// socket of an external virtiofsd, and [Shares] resolves each share's
// files for the node that serves them.
//
// A downwardMetrics volume is a read-only raw virtio disk on the node's
// file [DownwardMetricsDisk], in vhostmd's format ([WriteVhostmd],
// [ReadVhostmd]); devices.downwardMetrics adds the org.github.vhostmd.1
// channel on [DownwardMetricsSocket]. The node fills both.
//
// Sockets (guest agent, serial console, VNC) live under [RuntimeDir];
// QEMU creates them at start, so the caller prepares that directory for
// QEMU's user first ([MakeRuntimeDir]).
//
// [Mutator] hooks run after the build, in order, the way KubeVirt's hook
// sidecars edit the domain.
//
// The zero Options build for software emulation (domain type qemu): it
// runs on any host, including nested ones where KVM is unusable; set
// Options.Type to [TypeKVM] for hardware virtualisation. Under qemu,
// cpu.model host-passthrough becomes libvirt's "maximum" CPU, its TCG
// equivalent.
//
// What the builder cannot express is an error wrapping [ErrUnsupported]
// that names the field path; a resolver without a host source for a
// volume, kernel or network returns [ErrNotResolved]. All problems of one
// VMI are reported together.
//
// Known differences from KubeVirt, by design: the domain carries a <uuid>
// (firmware.uuid) besides the SMBIOS one; interfaces without macAddress
// get a stable MAC derived from namespace/name/interface instead of a pod
// NIC's; the virtio-scsi controller appears only when a disk uses it (no
// hotplug); startStrategy Paused is a start flag of the hypervisor, not
// XML; masquerade ports restrict nothing under user-mode networking (no
// inbound forwarding exists there); the KubeVirt metadata element holds
// uid, namespace, name and grace period, not migration state.
package domain
