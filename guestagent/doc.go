// Package guestagent is a client for the QEMU guest agent (QGA) and a
// poller that keeps a guest's own view of itself current, the way KubeVirt's
// virt-launcher does.
//
// The agent runs inside the guest, so everything it sends is untrusted: a
// reply line is bounded (Options.MaxReplyBytes, 1 MiB by default) and never
// buffered past the bound, JSON nesting and container lengths are bounded
// before decoding, every call has a deadline from its context and a stuck
// agent cannot hold a caller past it, and strings that leave the package for
// status or logs go through [Sanitize].
//
// # Transports
//
// A [Client] talks through a one-method [Transport]:
//
//   - [StreamTransport] speaks the raw byte stream of the host side of the
//     org.qemu.guest_agent.0 virtio-serial channel or of qemu-ga -m
//     unix-listen, and does QGA's framing: guest-sync-delimited with a fresh
//     random id and the 0xFF marker on every new connection and after any
//     timeout or garbage, so stale replies of timed-out requests are dropped.
//   - [PassthroughTransport] sends through a hypervisor's agent-command call
//     (libvirt's virDomainQemuAgentCommand, which frames by itself). Its
//     [AgentCommander] has the signature of hypervisor.AgentCommander, so a
//     hypervisor satisfies it and neither package imports the other.
//
// # Errors
//
// Agent errors are [*AgentError] with the agent's class and description;
// errors.Is matches [ErrCommandNotFound], [ErrCommandDisabled],
// [ErrGenericError] and [ErrAgent]. Deadlines surface as
// context.DeadlineExceeded, oversized replies as [ErrReplyTooLarge], garbage
// as [ErrProtocol], a broken channel as [ErrDisconnected].
//
// # Polling
//
// [Poller] runs KubeVirt's agent poller workers (version, filesystems,
// fsfreeze, sys, users) at KubeVirt's intervals, keeps a [Snapshot] and calls
// a hook when what KubeVirt pushes immediately changes. The helpers
// [MissingRequiredCommands] and [VersionSupported] implement KubeVirt's
// AgentVersionNotSupported check.
//
// This package imports only the standard library; the QGA server used by
// tests and the simulated hypervisor lives in guestagent/qgaserver.
package guestagent
