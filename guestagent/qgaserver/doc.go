// Package qgaserver is a QEMU guest agent that runs in-process: it speaks the
// real QGA wire protocol (JSON per line, guest-sync and guest-sync-delimited
// with the 0xFF marker, ids echoed, QEMU's error classes) over any byte
// stream or unix-socket listener, and answers passthrough commands the way
// libvirt's virDomainQemuAgentCommand returns them.
//
// It stands in for the guest in tests and is the simulated hypervisor's
// simulated guest. Its state (OS info, host name, users, filesystems,
// interfaces, time zone, version and command list) comes from a [Config] and
// can be changed while it runs ([Server.Update]); a [Fault] makes it hostile:
// slow, silent, garbage, oversized replies, a wrong sync id, or a disconnect
// in the middle of a reply.
//
// Known gaps compared with qemu-ga: a request must fit on one line (qemu-ga
// also accepts a request split across lines), guest-exec, guest-file-* and
// the set-* commands are not implemented (CommandNotFound), and argument
// checking covers only the commands it implements.
package qgaserver
