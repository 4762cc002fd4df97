// Package realqemu runs the migration benchmark's profiles on real QEMU:
// the same [bench.Profile] list and the same policies as the simulated
// benchmark, side by side, on the tiny real guest (hack/realstack) booted
// on one libvirt host and live-migrated to another by a
// [migration.Engine] with each policy.
//
// A profile is realised on the guest as follows: memory is the guest's
// memory (128 MiB to 1 GiB); dirtyRate and workingSet become the guest
// dirtier's rate and working set (kernel command line dirty_mb_s and
// dirty_mb, whole MiB; the dirtier rewrites random words in its working set
// round-robin, so the unique-page dirty rate of a pass is bounded by the
// working set; slices its vCPU missed are dropped, not made up, so QEMU's
// vCPU throttle slows it as it would a CPU-bound workload); bandwidth
// becomes the migration's maximum speed (libvirt
// caps in whole MiB/s). What the guest cannot realise (hotset or bursty
// shapes, bandwidth dips, a throttle sensitivity other than 1, a working
// set that leaves the guest kernel too little memory) is refused with the
// profile's field path, never approximated silently.
//
// Runs take real time: about 10 s to boot the guest and reach its agent,
// then the migration itself, each bounded by [Options.MaxTime]. Downtime
// is what libvirt reports for the completed job. The engine is stepped
// after [migration.Engine.NextPoll], as the node agent's Engine.Run does.
//
// With [Options.Progress] each run also lists the migration calls its
// engine made on the source host, with their times from the engine's
// start: the capability query, the start's parameters (bandwidth, downtime
// limit, auto-converge, post-copy, connections, TLS) and how long the job
// took to appear, every steering call (downtime, speed, throttle,
// post-copy, abort), and the number of job polls. Policies can so be
// compared call for call on the same guest.
//
// The package uses only the hypervisor interfaces; the caller connects the
// two hosts (cmd/virtkit's `bench migrate --hypervisor libvirt --uri A,B`
// does it with the libvirt adapter).
package realqemu
