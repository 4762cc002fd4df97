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
//     post-copy as soon as the model says so when allowed (pre-copy cannot
//     converge, or post-copy ends sooner; not waiting for the first pass),
//     raises the downtime
//     limit within its bound, and aborts, with the inequality that fails,
//     when nothing allowed can converge. Whether throttling helps is judged
//     by measuring the highest allowed throttle, not by a sensitivity
//     learned from short samples, which saturate at the working set.
//
// The virtkit policy is an ordered list of named rules
// ([VirtkitPolicy.RuleNames]): Decide tries them in this order and the
// first that applies decides. Its name goes into [Action.Rule] (stable and
// machine-readable, as a condition's Reason is) beside the sentence in
// [Action.Reason]; the names reach status.migrationState's decisions, the
// engine's log and its trace events. The engine folds repeated Continue
// actions of the same rule into one [Decision], whatever numbers their
// reasons quote. In post-copy:
//
//  1. PostCopyRunning: never abort now.
//
// Before the start (Start or Refuse):
//
//  2. StartUnmeasured: no bandwidth or dirty rate yet; the job decides.
//  3. StartUnmodelled: the model rejects the pre-start numbers.
//  4. StartPreCopy: pre-copy converges, or post-copy or a higher pause can help.
//  5. StartOnOneSample: one pre-start sample looks hopeless; it may be a burst.
//  6. StartThrottleCanHelp: a throttle can bring the dirty rate under the bandwidth.
//  7. RefuseHopeless: nothing allowed converges.
//
// In pre-copy:
//
//  8. Unmodelled: the model rejects this progress.
//  9. PostCopyFaster: post-copy, now, saves a share of M/B (during the first pass too).
//  10. AutoConvergeShortPause: back to the short pause while QEMU's auto-converge climbs.
//  11. RaiseForSpeed: what is pending fits the configured threshold; the short pause costs rounds.
//  12. AwaitMeasurement: no bandwidth or dirty rate yet.
//  13. ReleaseThrottle: the dirty rate fell; a lower throttle is enough.
//  14. RaiseToConfigured: the configured limit finishes more than 2 % earlier.
//  15. PreCopyConverges: pre-copy finishes within the budget.
//  16. PostCopyAfterFirstPass: pre-copy does not; post-copy moves the rest once, at once (not waiting for the first pass).
//  17. ThrottleStep: a direct throttle sized to finish within the budget.
//  18. AutoConvergeTooSlow: QEMU's auto-converge cannot get there before the completion timeout (abort).
//  19. AutoConvergeAtCeiling: QEMU's auto-converge reached 99 %; waiting for the rate under it.
//  20. AutoConvergeClimbing: QEMU's auto-converge can still bring the rate down.
//  21. ThrottleIneffective: the highest throttle did not help; release it.
//  22. RaiseToFloor: the remaining data settled at a floor the bound allows.
//  23. ConvergesSlowly: converging, slower than the budget; never aborted.
//  24. AwaitThrottleEffect: the last throttle step has not shown yet.
//  25. ObserveBeforeAbort: the job has not run [PolicyOptions.MinObservation].
//  26. HopelessEarly: every sample exceeds the bandwidth by [PolicyOptions.HopelessMargin] (abort).
//  27. AwaitJobDirtyRate: no probes; the job's own rate after the first pass decides.
//  28. ObserveForBurst: the samples do not span [PolicyOptions.SamplePatience] yet.
//  29. LowestSampleConverges: the lowest sample converges; the high one may be a burst.
//  30. QuieterRoundsConverge: pre-copy converges in the job's quieter rounds.
//  31. DirtyRateUnsteady: the rounds' rates vary; observing for [PolicyOptions.BurstPatience].
//  32. AwaitRounds: no round has reported a dirty rate yet.
//  33. NearCritical: at the highest throttle within 5 % of the bandwidth; the completion timeout bounds it.
//  34. Hopeless: nothing allowed converges (abort, with the inequality that fails).
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
// A caller's completion timeout ([Request.CompletionTimeout], KubeVirt's
// 150 s per GB) is not a verdict on a migration that converges: while the
// policy's latest decision predicts that pre-copy ends by the operator's
// upper bound ([Request.MaxCompletionTimeout]), [Engine.CompletionDeadline]
// extends the deadline to the predicted end with a margin, and the engine
// records a CompletionExtended decision once the timeout has passed; a
// decision that did not model pre-copy (no "ratio" figure, such as a
// threshold raised for the last round) keeps the deadline as it was. A
// migration the model says cannot converge keeps the plain timeout; without
// an upper bound (an explicit timeout, such as a migration policy's) the
// timeout is final.
//
// [Engine] ties a [hypervisor.Migrator] to a policy: Start measures and
// starts, Step polls once, decides and acts, Run loops Step on a ticker and
// aborts the job when its context ends. A harness on a virtual clock calls
// Start, then advances its clock by [Engine.PollInterval] and calls Step,
// until Step reports the end; with a non-blocking probe nothing in that
// loop waits on the clock, so runs are deterministic. Every change of course is a
// [Decision] with its rule, reason and numbers; [Engine.Snapshot] is a cheap copy
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
