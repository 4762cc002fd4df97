// Package simulation tests the whole system the way FoundationDB's
// simulation and etcd's robustness tests do: an embedded cluster
// (cluster.New) on a virtual clock, seeded so that a run repeats, driven by
// a seeded generator of user operations (apply, update and delete VMs,
// VMIs, ReplicaSets, MigrationPolicies, VMs and ReplicaSets deleted with a
// drawn propagation policy; start, stop, restart, pause, unpause,
// soft-reboot, migrate, cancel a migration, scale; cordon, uncordon and
// drain a node) and faults (node agent crash and restart, node freeze,
// partition from the store, store write conflicts and latency, guest
// crash, guest agent gone, migration stream cut, a congested migration
// network (4 or 16 MiB/s between hosts), a guest that ignores ACPI
// or takes a drawn time to power off). After every step (operation,
// Settle, Advance a seeded amount) and at quiescence (drains cancelled,
// faults healed, nodes uncordoned, ten virtual minutes later) it checks
// the system's invariants against the hypervisors' ground truth and the
// recorded history of the store: the cluster package's own checks (no
// double run, no leaked domain, no guest paused by an ended migration,
// owners and finalizers), run strategies and ReplicaSets converged, uids,
// nothing placed on a cordoned node, deletion propagation (an orphaned
// VMI survives its owner, the others go with it), a stopped guest ends
// Succeeded when it answers ACPI within its grace period and Failed no
// later than the grace period when it does not, every transition
// followed records its event, and a migration runs past its completion
// timeout only where its configuration allows it and never past the
// operator's bound (the embedded cluster gives migrations 5 s per GiB and
// virtkitMaxCompletionTimeoutPerGiB 120, so one over the congested network
// or under the MigrationPolicy's 8Mi/s cap runs past the timeout, and every
// extension ends well within the ten minutes of quiescence).
//
// The operations are a table (operations in ops.go): one row names an
// operation, says whether it is a fault, how often the generator picks it,
// how it draws its arguments and how it runs. A failing seed prints its
// operation log, shrinks it (delta debugging over the operations) and
// prints a replayable reproduction.
//
//	go test ./test/simulation -args -seeds 1:50 -ops 80
//	go test ./test/simulation -args -replay repro.json
//
// Harness, Recorder and Snapshot are usable on their own: a seeded cluster
// on virtual time whose names, uids, timeouts and random choices repeat.
// The components' store writes take turns: within a virtual instant each
// one (a reconciler's, a node agent's, an event, a drain's eviction) waits
// until the cluster has settled and then goes alone, in the seed's order of
// a canonical key (object, verb, writer, body; hashed with the seed, so
// each seed explores an interleaving of its own), so two components acting on
// one object at one instant (the garbage collector and the VM controller
// deleting a VMI, two writers of one status) go in the same order on every
// run, and an injected conflict or a real one falls the same way. The
// user's operations and the invariants' reads go around the turns. A
// scripted scenario's trace repeats byte for byte (TestSameSeedSameTrace);
// a generated seed's repeats for many seeds but not yet all
// (TestSeedsRepeat, run with -args -repeat): what a write depends on
// besides the store can still differ, such as which of two timers set for
// one instant by concurrent goroutines fires first.
//
// # Multi-process mode
//
// TestMultiProcess (RunMultiProcess) drives the same seeded generator
// against the control plane as separate operating system processes: a real
// etcd server, one `virtkit controller` and three `virtkit node` agents on
// the simulated hypervisor (--hypervisor sim, each host inside its node
// process, its guests kept in a --sim-state file so that they outlive a
// killed agent, as real guests outlive virt-handler; the host's watchdog
// armed, a 3 s fence timeout). The operations act through the store on
// etcd, as a client of the API would. Time is real: the pause after an
// operation is a tenth of its drawn advance of time, at most 2 s
// (-mp-time-scale, -mp-max-pause), a drain goes on for its drawn number of
// seconds or until quiescence, and the failover settings are short
// (300 ms heartbeats, a node failed 6 s after its last heartbeat, a 6 s
// leader lease: a 2 s one, etcd's smallest, was lost by a live controller
// whenever it or etcd stalled for about 1.3 s on a loaded machine).
//
// Faults in this mode act on the processes and their links: crash-agent
// is a SIGKILL of a node agent, restart-agent starts it again, freeze is a
// SIGSTOP of a node agent, partition cuts the TCP link between a node
// agent and etcd (each agent reaches etcd through a proxy of its own,
// internal/tcpproxy, which then holds every byte and every new
// connection), heal ends the node's partition and freeze, and
// restart-controller (this mode's own) is a SIGKILL of the controller
// followed by a new one. A node agent started during its partition waits
// for etcd and does not serve its host until it is reached; guest faults
// skip it. store-latency (real time, through proxies) holds every chunk
// on every process's link to etcd (the controller reaches etcd through a
// proxy too) for the drawn latency scaled like the pauses, at most
// 500 ms each way; unlike the embedded cluster's fault store, which delays
// the components' writes on virtual time, it slows their reads, watches
// and lease renewals as well. A node that was partitioned counts as one whose
// event recorder may have given up on writes, as the embedded cluster's
// recorders report. The guest faults (crash-guest, guest-agent-gone,
// cut-migration, acpi-ignore, acpi-delay) reach the simulated host inside
// each node process through its fault endpoint (`virtkit node
// --sim-faults-addr`, a loopback port, a capability of the simulator that
// libvirt has no counterpart for): each is posted to every node whose
// agent's GET /debug/domains shows the guest's domain active and owned,
// as the embedded cluster calls every host running it. A host inside a
// frozen or killed node process cannot be reached and is skipped, and a
// killed process's host forgets its guests' ACPI behaviours (its
// --sim-state file keeps definitions and run states only). Time is real,
// so a log with acpi-ignore or acpi-delay gets at least 240 s to converge:
// a stop of a guest that does not power off takes up to the longest grace
// period apply-vm draws (180 s). Left out, because they need hooks only
// the embedded cluster has: store-conflicts (the fault store's injected
// write conflicts, which a TCP proxy cannot make etcd produce), and
// slow-migration-network (the simulated hosts' shared network).
//
// The invariants are the same code, reading the store on etcd and each
// host's ground truth from its node agent's GET /debug/domains
// (--metrics-addr). The recorded history is checked after every step
// (uids, orphaning deletes, placements on cordoned nodes, processes that
// exited by themselves); the hosts are checked against the store only at
// quiescence, because separate processes cannot be read at one instant, so
// a guest running on two hosts is caught only when it still does then (the
// fault-injection suite samples for it continuously). At quiescence every
// fault is healed (frozen agents resumed, killed processes started, drains
// ended, nodes uncordoned) and the final checks run until they pass or
// -mp-converge (90 s) has passed. Stops are followed with the ACPI
// behaviour the log gave their guest, as in the embedded cluster. A
// failing seed prints its operation log and the tail of every process's
// log, and (with -multiprocess) is shrunk on fresh processes for each
// candidate, within -mp-shrink-runs runs and -mp-shrink-wall; as real time does not repeat
// a run, a candidate counts as failing when one run of it fails, so the
// shrink may stop early on a failure that depends on timing. The
// reproduction replays with -multiprocess -replay FILE.
//
// Without -multiprocess, TestMultiProcess runs one seed of ten
// operations (skipped in -short); -multiprocess gives it -seeds and -ops
// (TestSimulation then skips). It needs an etcd server binary
// (hack/etcd.sh builds build/bin/etcd; $VIRTKIT_ETCD_BIN overrides) and
// skips without one, or fails under VIRTKIT_STRICT=1. It builds the
// virtkit command unless $VIRTKIT_BIN names one.
//
//	go test ./test/simulation -run TestMultiProcess -args -multiprocess -seeds 1:10 -ops 20
package simulation
