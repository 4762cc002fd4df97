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
// also accepts a request split across lines); guest-exec, guest-file-*,
// guest-ssh-*, the set-* and the stats commands are not implemented
// (CommandNotFound); error descriptions are close to QEMU's but not always
// identical (clients should match the class); Serve serves several clients
// at once where qemu-ga serves one at a time.
package qgaserver
