// Package bench runs live-migration policies side by side on identical
// simulated workloads: the harness behind `virtkit bench migrate`.
//
// A [Profile] is a guest (memory, dirty rate, working set, write pattern,
// throttle sensitivity), a link (bandwidth, dips) and the permissions every
// policy gets (post-copy, auto-converge, downtime limit). [Run] builds two
// simulated hosts on one virtual clock per (profile, policy), starts the
// guest with the profile's workload and lets a [migration.Engine] with that
// policy migrate it, advancing the clock by the engine's next poll
// interval between steps. The simulator and the engine share nothing but
// the hypervisor interfaces; with [CapabilitiesLibvirt] (the default) the
// simulator presents exactly what libvirt offers (no dirty-rate probe
// during the job, no direct throttle, a job dirty rate of 0 before QEMU's
// first sync), so what runs here is what runs against libvirt.
// [CapabilitiesFull] adds the simulator's extras and every row says which
// it ran with. The node agent's completion and progress timeouts bound the
// virtkit engine as on a node, and its pre-start measurement counts in its
// total. The virtual clock makes every figure exactly reproducible.
//
// Each run yields a [Row]: outcome, mode, total time against the lower
// bound memory/bandwidth, downtime, bytes sent, the time of the last change
// of course, the highest throttle, and the guest's cost: vCPU-seconds taken
// by the throttle and seconds spent in post-copy. [WriteTable], [WriteJSON] and
// [WritePlot] (SVG of remaining data against time) render them.
//
// Runs are scored by one named rule, [RuleWithinDowntimeLimit]: a
// migration succeeds only if it completed and its actual pause stayed
// within the downtime limit configured for it (the profile's
// downtimeLimit; every run is held to it, whatever limit its policy then
// sets in QEMU: Nova's ramp, for one, climbs to its own 500 ms). A
// completed migration with
// a longer pause has not met its contract. Every row records its limit
// and whether its pause stayed within it (the "within limit" column,
// JSON withinDowntimeLimit). [Compare] holds virtkit to the fastest
// baseline that succeeded within the limit; baselines that succeeded
// over it are still listed with their pause and overshoot and counted
// apart ("succeeded over the downtime limit"), and the fastest baseline
// regardless of its pause is shown beside the best within it, so both
// ratios can be read. virtkit is held to the same rule: a virtkit run
// over the limit is not a success within it. [WriteComparison] prints
// the comparison and the targets with and without the rule.
//
// [BuiltinProfiles] are the eight built-in workloads (P1 to P8);
// [Profile.Feasible] says, from the closed-form model, whether
// anything the permissions allow can converge.
package bench
