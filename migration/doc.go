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
//     Refuse before the job). The virtkit policy ([NewPolicy]) throttles
//     just enough to bring the effective dirty rate under the bandwidth and
//     learns whether throttling works at all, switches to post-copy after
//     the first full pass when allowed, raises the downtime limit within its
//     bound, and aborts at once, with the inequality that fails, when
//     nothing allowed can converge.
//
// [Engine] ties a [hypervisor.Migrator] to a policy: Start measures and
// starts, Step polls once, decides and acts, Run loops Step on a ticker and
// aborts the job when its context ends. Every change of course is a
// [Decision] with its reason and numbers; [Engine.Snapshot] is a cheap copy
// for metrics and [Snapshot.EngineStatus] renders it for the VMI's
// status.migrationState.
//
// The baselines [KubeVirtPolicy] and [NovaPolicy] re-implement, rule for
// rule, KubeVirt's legacy monitor loop and Nova's libvirt driver, so the
// benchmark in [github.com/virtkit/virtkit/migration/bench] compares all of
// them on identical simulated workloads.
package migration
