// Package bench runs live-migration policies side by side on identical
// simulated workloads: the harness behind `virtkit bench migrate`.
//
// A [Profile] is a guest (memory, dirty rate, working set, write pattern,
// throttle sensitivity), a link (bandwidth, dips) and the permissions every
// policy gets (post-copy, auto-converge, downtime limit). [Run] builds two
// simulated hosts on one virtual clock per (profile, policy), starts the
// guest with the profile's workload and lets a [migration.Engine] with that
// policy migrate it, advancing the clock by the policy's poll interval
// between steps. The simulator and the engine share nothing but the
// hypervisor interfaces, so what runs here is what runs against libvirt;
// and the virtual clock makes every figure exactly reproducible.
//
// Each run yields a [Row]: outcome, mode, total time against the lower
// bound memory/bandwidth, downtime, bytes sent, the time of the last change
// of course, and the highest throttle. [WriteTable], [WriteJSON] and
// [WritePlot] (SVG of remaining data against time) render them.
// [BuiltinProfiles] are the eight workloads of the migration-physics
// reference; [Profile.Feasible] says, from the closed-form model, whether
// anything the permissions allow can converge.
package bench
