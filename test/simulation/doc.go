// Package simulation tests the whole system the way FoundationDB's
// simulation and etcd's robustness tests do: an embedded cluster
// (cluster.New) on a virtual clock, seeded so that a run repeats, driven by
// a seeded generator of user operations (apply, update and delete VMs,
// VMIs, ReplicaSets, MigrationPolicies, VMs and ReplicaSets deleted with a
// drawn propagation policy; start, stop, restart, pause, unpause,
// soft-reboot, migrate, cancel a migration, scale; cordon, uncordon and
// drain a node) and faults (node agent crash and restart, node freeze,
// partition from the store, store write conflicts and latency, guest
// crash, guest agent gone, migration stream cut, a guest that ignores ACPI
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
// later than the grace period when it does not, and every transition
// followed records its event.
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
// on virtual time whose per-instant trace repeats byte for byte.
package simulation
