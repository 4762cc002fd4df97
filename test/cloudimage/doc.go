// Package cloudimage holds the real-stack tests that boot a real Debian 12
// cloud guest (built from Debian's packages by
// hack/realstack/build-cloud-image.sh) on libvirtd + QEMU under software
// emulation, and let the guest's own cloud-init read virtkit's NoCloud and
// ConfigDrive volumes. Every effect of the cloud-init data (host name, a
// user with a password and an authorized ssh key, a runcmd, the network
// configuration) is checked from outside through the guest agent, as is the
// VMI's guestOSInfo.
//
// The tests need the build tags realstack and libvirt, root, libvirtd
// (hack/realstack/libvirtd.sh start) and the image; without them they skip
// with a how-to (and fail under VIRTKIT_STRICT=1).
package cloudimage
