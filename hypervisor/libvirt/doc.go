// Package libvirt implements [hypervisor.Hypervisor] over libvirt and QEMU
// through the cgo bindings libvirt.org/go/libvirt. It is the only package of
// virtkit that uses cgo; everything else reaches real guests through the
// hypervisor port.
//
// [New] opens one connection ("qemu:///system" by default, any libvirt URI:
// "test:///default" is libvirt's in-process test driver). The returned
// [*Hypervisor] also implements [hypervisor.DirtyRateMeasurer] (QEMU's page
// sampling: the only mode that works under TCG on QEMU 7.2),
// [hypervisor.Migrator] (peer-to-peer live migration with
// virDomainMigrateToURI3), [hypervisor.AgentCommander]
// (virDomainQemuAgentCommand), [hypervisor.MigrationCapabilityReporter]
// and [hypervisor.Throttler], which always answers with an error matching
// [hypervisor.ErrNotSupported] because libvirt has no call that sets the
// vCPU throttle directly.
//
// # Migration
//
// Migrations are live and peer-to-peer; MigrationParams map to libvirt's
// typed parameters and flags (auto-converge initial and increment, post-copy,
// multifd connections, TLS). A job's counters leave the dirty rate
// unmeasured until QEMU has synced its dirty bitmap after the setup pass
// (memory_iteration 2): libvirt reports 0 before that, which is no
// measurement. QEMU can throttle vCPUs only through auto-converge, a
// capability fixed for the whole job, so the capabilities report no direct
// throttle. A job started with AutoConverge implements
// [hypervisor.Throttler] by steering auto-converge: SetThrottle sets QEMU's
// trigger threshold, initial, increment and maximum throttle through the
// QEMU monitor (migrate-set-parameters), and QEMU applies the level at its
// next trigger (a bitmap sync); JobStats.AutoConvergeThrottle reads it back.
// libvirt marks a domain that received a raw monitor command as tainted
// ("custom-monitor"); that flag is the cost of this control. TLS
// (VIR_MIGRATE_TLS) uses the hosts' migrate_tls_x509_cert_dir certificates;
// when they are missing the start fails with libvirt's reason.
//
// # Contexts and C calls
//
// libvirt's C API takes no context. Every call that may block runs in its own
// goroutine; the method returns ctx.Err() as soon as ctx ends. The C call
// itself cannot be interrupted: it may still finish (and take effect) later,
// and the goroutine then frees every libvirt object it holds. No libvirt
// object ever leaves this package.
//
// Each call runs on a connection of its own, taken from a small pool: the
// libvirt 9.0 client holds up every call that shares a connection with one
// waiting on the daemon (a frozen guest agent, a running migration) until
// that one returns, so a single stuck guest would otherwise stall the whole
// host's control plane.
//
// # Errors
//
// libvirt error codes are translated to the hypervisor sentinels
// (ERR_NO_DOMAIN to [hypervisor.ErrNotFound], ERR_OPERATION_INVALID to
// [hypervisor.ErrInvalidState] or, for job control without a job,
// [hypervisor.ErrNoJob], ERR_NO_SUPPORT and "unsupported flags" to
// [hypervisor.ErrNotSupported], ERR_AGENT_UNRESPONSIVE to
// [hypervisor.ErrAgentUnavailable], ...) and wrapped in a
// [*hypervisor.DomainError]. The original libvirt.Error stays in the chain,
// so errors.Is(err, libvirt.ERR_NO_DOMAIN) keeps working.
//
// # Events
//
// libvirt's event loop is process-wide C state. [New] registers libvirt's
// default implementation (idempotent) before it connects and runs the loop
// in a goroutine until [Hypervisor.Close]: remote connections need it to
// answer the daemon's keepalive pings (unanswered, the daemon drops the
// connection after about 30 s). The event callbacks are registered once per
// Hypervisor, on its primary connection, and fanned out to every
// [Hypervisor.Events] channel until that channel's context ends.
//
// # Building
//
// With cgo, the default build links libvirt through pkg-config and needs
// libvirt-dev (hack/realstack/install.sh installs it). Building with
// -tags libvirt_dlopen needs no libvirt headers: the bindings load
// libvirt.so.0 at run time and [New] fails with an error when it is missing,
// so tests skip. With CGO_ENABLED=0 the package builds a stub whose [New]
// returns an error matching [hypervisor.ErrNotSupported].
//
// Tests: the normal tier runs the hypervisortest conformance suite against
// "test:///default". The real-stack tier (build tag realstack) runs it
// against libvirtd A (qemu:///system) migrating to libvirtd B
// (qemu+tcp://127.0.0.1:16510/system) with the tiny guest of
// hack/realstack; see hack/realstack/README.md.
package libvirt
