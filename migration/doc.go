// Package migration is virtkit's dirty-rate-aware live-migration engine.
//
// Live migration copies a running guest's memory while the guest keeps
// writing to it. Whether that ever finishes is physics: with memory M,
// bandwidth B and dirty rate D (r = D/B), pre-copy takes about
// (M/B)(1 − r^(n+1))/(1 − r) and never converges when r ≥ 1 or when the
// writable working set is larger than B × the downtime limit. QEMU itself
// never gives up; every management layer adds its own clock. KubeVirt and
// Nova use fixed per-GiB timeouts, so a hopeless guest burns hundreds of
// times its memory in bandwidth before anyone notices.
//
// The engine works in three steps and keeps re-running the last one:
//
//   - Measure. Before the start it samples the dirty rate
//     ([hypervisor.DirtyRateMeasurer]: page sampling on libvirt, the
//     memory model on sim), unless the first pass is expected to be too
//     short for the delay to pay ([Options.MeasureWorth]); during the job
//     it reads the job's dirty rate and transfer rate from
//     [hypervisor.JobStats]. The job's dirty rate counts as not measured
//     until QEMU completed a sync (memory_iteration 2; libvirt reports 0
//     before), so the first pass runs on the pre-start sample. Anything not
//     measured stays an invalid [hypervisor.Measured], never a zero. The
//     bandwidth is smoothed, and the best smoothed value is kept, so a
//     temporary dip does not look like a slow link.
//   - Predict. [Predict] is the closed-form model: rounds, total time,
//     downtime, bytes sent, whether pre-copy converges, the lower bound M/B,
//     the time of post-copy after one pass, the smallest throttle that
//     converges. Where the dirty rate reaches the bandwidth, the working set
//     the rounds have shown bounds what a round leaves.
//   - Decide. A [Policy] is a pure function from [Progress] to [Action]:
//     Continue, Throttle, RaiseDowntime, SwitchPostCopy, Abort (Start or
//     Refuse before the job). The virtkit policy ([NewPolicy]) aims at an
//     80 ms pause while the extra rounds cost under 2 %, and never lets the
//     switchover threshold plus a 30 ms reserve exceed the configured
//     limit. Under a bandwidth cap on QEMU, which sends what is left at
//     the switchover without the cap
//     ([hypervisor.MigrationCapabilities.StopCopyUncapped]), it aims at the
//     configured limit (less the reserve) from the start: the pause QEMU
//     reckons at the cap bounds the real one, and a shorter aim would only
//     keep the cap on the last bytes. When the model says pre-copy will not converge, or will take
//     longer than 1.25 × M/B, it throttles just enough (directly, or by
//     sizing QEMU's auto-converge steps at the start where that is the only
//     lever), lowers a throttle once the dirty rate falls, switches to
//     post-copy after the first full pass when allowed, raises the downtime
//     limit within its bound, and aborts, with the inequality that fails,
//     when nothing allowed can converge. Whether throttling helps is judged
//     by measuring the highest allowed throttle, not by a sensitivity
//     learned from short samples, which saturate at the working set.
//
// The engine plans with what the backend really offers
// ([hypervisor.MigrationCapabilityReporter]): libvirt has no direct
// throttle and no dirty-rate measurement during a job, so there the only
// throttle is QEMU's auto-converge, enabled at the start.
//
// Aborting is the one decision that cannot be taken back, so it is judged
// on the best bandwidth seen (a dip never causes it); with probes during
// the job ([Options.Probe], where the backend allows them) only once the
// samples span a few seconds, and without them not before the first pass
// ends (a single pre-start sample may have caught a burst) — with one
// exception: when nothing allowed can help (no post-copy, no throttle),
// the engine takes a second pre-start sample when the first is over the
// expected bandwidth (a configured cap), and once the job has run
// 10 s the policy gives up if both samples exceed the job's best bandwidth
// by [PolicyOptions.HopelessMargin] (2×) and pre-copy would not converge
// even at the lower sample divided by that margin. After the first
// pass a spread of the job's per-round dirty rates means phases worth
// waiting out, and a pause expected at switchover that stops improving for
// ten rounds and 40 s means a floor the rates do not show. Where no
// throttle is allowed, a floor is called sooner, 20 s after the first pass,
// once the rounds have resent four times the memory at the first pass's
// pace while the best pause expected stays 1.5 × over the limit and the
// last three rounds did not bring it down by even 1 %
// ([PolicyOptions.StallData]): on a fast link a hot set costs a memory's
// worth of traffic every few seconds for nothing, while rounds that still
// shrink a little each time, as a sequential writer just under the
// bandwidth makes them, end. At the highest
// throttle with the dirty rate within 5 % of the bandwidth pre-copy may
// still converge, slowly; the completion timeout bounds that, not an abort.
//
// [Engine] ties a [hypervisor.Migrator] to a policy: Start measures and
// starts, Step polls once, decides and acts, Run loops Step on a ticker and
// aborts the job when its context ends. A harness on a virtual clock calls
// Start, then advances its clock by [Engine.PollInterval] and calls Step,
// until Step reports the end; with a non-blocking probe nothing in that
// loop waits on the clock, so runs are deterministic. Every change of course is a
// [Decision] with its reason and numbers; [Engine.Snapshot] is a cheap copy
// for metrics and [Snapshot.EngineStatus] renders it for the VMI's
// status.migrationState.
//
// The baselines [KubeVirtPolicy], [StallPolicy] and [NovaPolicy]
// re-implement, rule for rule, KubeVirt's legacy monitor loop, KubeVirt's
// stall detector and Nova's libvirt driver (with auto-converge or post-copy
// and force-complete as options), so the benchmark in
// [github.com/virtkit/virtkit/migration/bench] compares all of them on
// identical simulated workloads.
package migration
