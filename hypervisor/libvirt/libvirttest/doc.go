// Package libvirttest holds the helpers real-stack tests use to reach the
// two libvirtd instances and the tiny guest that hack/realstack sets up:
// connection URIs, the guest's domain XML (direct kernel boot of the cloud
// kernel with the busybox initramfs that runs the real qemu-ga and a memory
// dirtier), skip-or-fail checks that the stack is up, and waits for the
// guest agent.
//
// It is pure Go (no cgo) and talks to guests only through the
// [hypervisor.AgentCommander] it is given, so any package's realstack test
// can use it next to [github.com/virtkit/virtkit/hypervisor/libvirt].
//
// The stack comes from the repository's scripts:
//
//	hack/realstack/install.sh && hack/realstack/build-guest.sh && hack/realstack/libvirtd.sh start
package libvirttest
