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
//     memory model on sim); during the job it reads the job's dirty rate and
//     transfer rate from [hypervisor.JobStats]. Anything not measured stays
//     an invalid [hypervisor.Measured], never a zero. The bandwidth is
//     smoothed, and the best smoothed value is kept, so a temporary dip does
//     not look like a slow link.
//   - Predict. [Predict] is the closed-form model: rounds, total time,
//     downtime, bytes sent, whether pre-copy converges, the lower bound M/B,
//     the time of post-copy after one pass, the smallest throttle that
//     converges.
//   - Decide. A [Policy] is a pure function from [Progress] to [Action]:
//     Continue, Throttle, RaiseDowntime, SwitchPostCopy, Abort (Start or
//     Refuse before the job). The virtkit policy ([NewPolicy]) aims at a
//     short pause (100 ms) while the extra rounds cost little; when the
//     model says pre-copy will not converge, or will take longer than
//     1.25 × M/B, it throttles just enough to bring the effective dirty rate
//     under the bandwidth and learns whether throttling works at all
//     (releasing a throttle that does not slow the dirtying), switches to
//     post-copy after the first full pass when allowed, raises the downtime
//     limit within its bound, and aborts, with the inequality that fails,
//     when nothing allowed can converge.
//
// Aborting is the one decision that cannot be taken back, so it is judged
// on the best bandwidth seen (a dip never causes it) and, when the engine
// can probe the dirty rate while the job runs ([Options.Probe]), only once
// the samples span a few seconds, so a burst is not mistaken for a
// hopeless guest; after the first pass a spread of the job's per-round
// dirty rates means phases worth waiting out, and a pause expected at
// switchover that stops improving for ten rounds means a floor the rates do
// not show. QEMU's own job dirty rate exists only after the first
// pass; where probing would contend with the migration (libvirt page
// sampling), the engine works from the pre-start measurement and the job's
// rate alone.
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
// The baselines [KubeVirtPolicy] and [NovaPolicy] re-implement, rule for
// rule, KubeVirt's legacy monitor loop and Nova's libvirt driver, so the
// benchmark in [github.com/virtkit/virtkit/migration/bench] compares all of
// them on identical simulated workloads.
package migration
