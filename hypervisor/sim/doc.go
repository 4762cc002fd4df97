// Package sim is a simulated hypervisor in pure Go: the embedded default of
// virtkit, needing no daemon and no root. A [Host] implements
// [github.com/virtkit/virtkit/hypervisor.Hypervisor] with libvirt's
// lifecycle and state reasons, plus the optional capabilities a real host
// has: dirty-rate measurement, live migration (with auto-converge
// throttling and post-copy) and guest-agent commands. A control plane
// tested against it behaves as on libvirt; the conformance suite in
// [github.com/virtkit/virtkit/hypervisor/hypervisortest] holds both to the
// same contract.
//
// # Domains
//
// Domains are defined from libvirt domain XML (parsed with libvirtxml):
// name, UUID, memory, vCPUs, disks, interfaces and the
// org.qemu.guest_agent.0 channel are read. A started domain is Running
// (Booted) at once, as with QEMU; its guest agent connects after
// Options.BootDelay of running time and disconnects while the domain is
// paused or stopped. Stats move with time: CPU time, balloon and memory
// statistics, network and block counters.
//
// Shutdown and RequestShutdown press the guest's ACPI power button, as
// libvirt's virDomainShutdown does: the guest powers off after
// Options.ShutdownDelay of running time and the domain turns Shutoff with
// reason Shutdown. [Host.SetACPIBehaviour] gives one domain name its own
// delay, or a guest that ignores the button (hung, no ACPI handler) and runs
// until destroyed.
//
// # Memory model
//
// Each domain runs a [Workload]: a raw dirty rate spread over a working set
// in a [Shape] (uniform random, sequential sweep, hot set, bursts), and a
// throttle sensitivity saying how much of the dirtying slows down when
// the vCPUs are throttled. Unique dirty bytes are integrated in 10 ms steps
// (random writes saturate as W·(1−e^(−Dτ/W)), a sweep as min(W, Dτ)). A
// dirty-rate measurement reads that model over the requested period.
//
// # Migration
//
// Hosts joined by a [Network] migrate to each other; the destination URI
// is the target host's name and the [Link] between them has a bandwidth
// that can dip. A migration follows the fluid model of pre-copy:
// the first pass sends all memory, each bitmap sync adds what was dirtied
// meanwhile, and QEMU's switchover rule stops the guest once the pending
// bytes fit in bandwidth (measured over 100 ms windows) × downtime limit.
// A sync merges the dirtied pages into the pending set as QEMU's bitmap
// does: a page still pending, or dirtied twice, is sent once, and only
// newly set pages count as dirtied. Auto-converge follows QEMU: every sync
// period of at least one second in which the guest newly dirtied more than
// half of what was sent counts, and every second count raises the throttle
// (20 %, then +10 %, at most 99 %). With Options.AutoConvergeSchedule
// AutoConvergeQEMU92, QEMU 9.2's timer also syncs every 5 s within a long
// pass, so the throttle keeps climbing while the pass runs.
// Options.LibvirtFace presents exactly what libvirt offers: jobs without a
// direct throttle, no dirty-rate calculation during a job, and a job dirty
// rate of 0 until the first sync computed one.
// Post-copy pauses the source for Options.PostCopyBlackout, runs the guest
// on the target and pulls the rest at link speed. Job statistics carry the
// fields libvirt fills, with "not measured" kept apart from zero (QEMU has
// no dirty rate before its first one-second sync period). The job also
// implements [github.com/virtkit/virtkit/hypervisor.Throttler] to set the
// throttle directly. Link.Bandwidth is the effective throughput, so
// MigrationParams.ParallelConnections does not change it; dips are timed
// from the start of each migration, and concurrent migrations on a link
// share it equally.
//
// MigrationParams.CopyDisks copies those disks (by target device) to the
// files the destination XML gives them, as libvirt's non-shared-disk
// migration does over NBD: the disks cross the link before memory, the
// share of the guest's disk writes (Workload.DiskRate) that lands behind
// the copy's front is sent again, and once the copy has caught up the
// mirror is synchronised and pre-copy of memory begins; at switchover the
// destination files hold the source files' bytes. A disk whose file does
// not exist copies as empty. Copying disks to a host in another process
// is not supported.
//
// # Migration between processes
//
// A host in another process (a `virtkit node --hypervisor sim` process on
// another machine, say) receives migrations through a
// [MigrationListener] ([ListenMigration]); a migration whose destination
// (or data) URI is tcp://HOST:PORT goes there over one TCP connection. The
// stream is framed and bounded: a hello with the domain XML and workload,
// answered once the paused incoming domain exists; the pages of each pass,
// really written to the socket as the model sends them; a post-copy
// notice; the switchover (with the guest's VNC display), answered when
// the guest runs on the target, or an abort. The target reports a lost incoming domain; both sides ping
// while idle, and every read and write has a deadline. The model's link is
// Options.MigrationLink, capped by the socket's measured throughput when
// that is lower. The stream has no TLS (tls:// is refused with
// hypervisor.ErrNotSupported) and no authentication: use it on a trusted
// network.
//
// # Console and display
//
// [Host.OpenConsole] attaches to a running domain's serial console: each
// attachment gets the boot messages and a prompt of a small simulated
// shell that answers hostname, uname, echo, true and help. [Host.OpenVNC]
// serves the domain's display as QEMU's VNC socket would (RFB 3.8, 3.3
// and 3.7 clients too, security type None, Raw encoding, true-colour pixel
// formats of 8, 16 or 32 bits), but text only: an 80x25 console of 8x16
// cells (640x400) drawn with a built-in font, showing a session of the
// same shell; keys typed in the viewer reach it, pointer events and cut
// text are ignored. The display is the domain's, as QEMU's is: every
// viewer sees and types into the same screen, which shows the boot
// messages and a prompt from its first frame, and a live migration (on a
// Network or over TCP) carries it to the target with the line being
// typed. [VNCText] reads a framebuffer of it back to text, for tests of
// VNC tooling. Console and display connections close when the domain
// stops running on the host (stopped, or migrated away).
//
// # Guest services
//
// A simulated guest has no network stack; instead the host models the
// services a guest would run, as a simulator-only stand-in for a real
// image. [Host.ConfigureGuest] (called by the node agent before each
// port-forward with the VMI's annotations and cloud-init user-data) reads
// the [ServicesAnnotation] "sim.virtkit.io/services", KIND:PORT pairs such
// as "ssh:22,http:8080,echo:7", and the user-data's #cloud-config: an SSH
// server on port 22 is added when it gives ssh_authorized_keys (top-level
// keys admit any login name, a user's keys under users admit that user).
// [Host.DialGuest] connects to one of them over an in-memory pipe:
//   - ssh: an SSH-2 server (golang.org/x/crypto/ssh) with public-key
//     authentication, running the console's shell for exec requests
//     (commands separated by ";" or "&&"; exit status 127 for a command the
//     shell does not know) and interactive shells. Its ed25519 host key is
//     derived from the domain's UUID, so it stays across restarts and
//     migrations.
//   - http: HTTP/1.1, 200 with a line naming the guest, method and path for
//     GET and HEAD, 405 otherwise.
//   - echo: every byte sent comes back.
//
// Other ports refuse the connection, as do guests that are not running
// (paused, stopped, an incoming migration). Open connections break when the
// domain stops running on the host: paused, stopped, or migrated away (the
// switchover's downtime); a new connection reaches the guest on its new
// host. Only tcp is modelled.
//
// # Watchdog
//
// A host has a watchdog, disarmed until the first [Host.PetWatchdog]: unless
// petted again within the timeout of the host's clock, it fires and every
// active domain is destroyed, as a hardware watchdog resetting the machine
// would stop them. It fires lazily, at the first call into the host or step
// of its clock after the deadline and before anything else, so a node agent
// that was frozen past the deadline never sees a guest that should be gone.
// A [Persistent] host keeps the deadline in its state file and restores its
// guests stopped when the deadline passed while the process was away.
//
// # Clocks and determinism
//
// A host runs on a [Clock]: [RealClock] for demos, or a [VirtualClock]
// shared by every host of a simulation. Nothing in the simulator runs on
// its own goroutine on the virtual clock: every step (a guest finishing its
// boot, a migration's 10 ms step, the target taking over) runs
// synchronously inside [VirtualClock.Advance], and every call brings the
// host up to the clock's time first. A loop that advances the clock and
// then reads or steers a job is therefore race-free and deterministic:
// the same inputs and the same Advance steps give the same results.
//
//	clock := sim.NewVirtualClock(start)
//	src := sim.New(sim.Options{Name: "src", Clock: clock})
//	dst := sim.New(sim.Options{Name: "dst", Clock: clock})
//	net := sim.NewNetwork()
//	net.Connect(src, dst, sim.Link{Bandwidth: 1_250_000_000})
//	// define, start, src.SetWorkload(name, w) ...
//	job, _ := src.StartMigration(ctx, name, hypervisor.MigrationParams{DestinationURI: "dst"})
//	for {
//		select {
//		case <-job.Done():
//			return job.Result(ctx)
//		default:
//		}
//		clock.Advance(400 * time.Millisecond)
//		stats, _ := job.Stats(ctx)
//		// decide: job.SetMaxDowntime, SetThrottle, StartPostCopy, Abort ...
//	}
//
// Calls that wait on the clock (Shutdown, MeasureDirtyRate, Result) block
// until some other goroutine advances it; call them from a goroutine other
// than the one driving Advance, or drive time first and read results after:
// [Host.StartDirtyRateCalc] starts a measurement without waiting, the
// driving loop advances the clock by the period, then reads the result.
//
// A VirtualClock is also a k8s.io/utils/clock WithTicker (timers and
// tickers that deliver when Advance or [VirtualClock.Step] reaches them),
// so the same clock can drive a whole control plane: cluster.Options.Clock
// hands it to the controllers, scheduler, node agents and guest-agent
// pollers, and cluster's Advance steps it one due instant at a time.
package sim
