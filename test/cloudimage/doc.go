// Package cloudimage holds the real-stack tests that boot a real Debian 12
// cloud guest (built from Debian's packages by
// hack/realstack/build-cloud-image.sh) on libvirtd + QEMU under software
// emulation, and let the guest's own cloud-init read virtkit's NoCloud and
// ConfigDrive volumes. Every effect of the cloud-init data (host name, a
// user with a password and an authorized ssh key, a runcmd, the network
// configuration) is checked from outside through the guest agent, as is the
// VMI's guestOSInfo.
//
// Two more tests boot the same image from real disk sources, with no
// cloud-init data: a VirtualMachine whose dataVolumeTemplates import the
// qcow2 from a loopback HTTP server (the importer converts it to raw), and
// one whose containerDisk and kernelBoot container the node pulls from
// Debian's docker-registry on loopback, where the test pushed the image in
// KubeVirt's containerDisk format (the disk under /disk/). Each is checked
// through the guest agent (the root file system is the VM's disk, the OS is
// Debian) and by the VMI's guestOSInfo. Two more boot it from a DataVolume
// imported from an S3-compatible server on loopback (source.s3 with a
// secretRef) and from one filled through the upload proxy (source.upload,
// virtctl image-upload's path).
//
// TestRealVLANBridges uses the guest's kernel, which has bridge VLAN
// filtering and 802.1Q where the test machine's may not: it builds the
// vlanprobe command (the node agent's network set-up for
// NetworkAttachmentDefinition bridges with a vlan), copies it in through
// the guest agent and runs it there, reading its verdicts back.
//
// Each guest keeps a core busy under software emulation: the tests that
// boot one guest run two at a time, one on each of the two libvirtd
// instances hack/realstack/libvirtd.sh starts (never two clusters on one
// daemon, whose node agents would remove each other's defined domains).
// The shared-storage migration test, which uses both daemons, and the
// snapshot test, which boots three guests side by side, run alone first.
//
// The tests need the build tags realstack and libvirt, root, both libvirtd
// instances (hack/realstack/libvirtd.sh start), the image, and for the
// registry test the docker-registry package; without them they skip with a
// how-to (and fail under VIRTKIT_STRICT=1).
package cloudimage
