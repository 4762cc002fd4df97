// Package faults is virtkit's fault-injection suite: the control plane as
// separate operating system processes (two `virtkit controller` replicas
// electing a leader, three `virtkit node` agents on the simulated
// hypervisor) against a real etcd server process, while the suite kills,
// freezes and partitions them.
//
// Scenarios: SIGKILL of the leading controller (twice), the leading
// controller partitioned from etcd, SIGKILL of a node agent
// (restarted at once, kept down past the failover, killed again while its
// restart loads its host) and of the etcd server (restarted on its data
// directory while a writer keeps creating VMs); SIGSTOP and SIGCONT of a
// node agent; a network partition between a node agent and etcd, also
// with the agent killed and restarted inside it (every controller and node
// process reaches etcd through its own TCP proxy, which the suite cuts,
// slows and heals); deletes racing creates;
// twenty concurrent `virtkit apply` processes on the same and on different
// objects. Killed controllers and agents are restarted by the suite's
// supervisor, as systemd would, unless a scenario holds them down.
//
// During every scenario and after it the suite checks:
//
//   - no VM runs on two nodes at the same instant: a detector samples
//     every node's running domains every 50 ms;
//   - no uid belongs to two objects, and a VM nobody deleted keeps its uid;
//   - no object is lost: every VM whose creation was acknowledged is
//     present until the suite deletes it;
//   - eventually every VM (runStrategy Always) has exactly one VMI, Running
//     on a live node, whose guest runs on that node and nowhere else, and no
//     other guest runs anywhere.
//
// What runs on a node is observed as the node package documents it: a
// running agent's GET /debug/domains (on its --metrics-addr) reports what
// its hypervisor really runs, and its first answer after a freeze already
// reflects the host's watchdog. The guests of an agent that does not
// answer are those its simulated host's state file (--sim-state) records:
// guests outlive their agent, so a killed agent's guests keep running until
// the watchdog deadline on file stops them (never, when none is armed), and
// a frozen agent's guests are those of its last answer, until the watchdog
// deadline it carried. Every node is read twice per round and a guest
// counts only when both reads show it active with the same uuid, so every
// reported double run is certain, not an artefact of reading nodes one
// after the other.
//
// Node agents run with short heartbeats and a 3 s fence timeout; the
// controllers' grace periods (4 s + 2 s) exceed the 1.5 x fence timeout the
// node-health controller waits at least.
//
// The tests carry the build tag faults and need an etcd server binary
// (hack/etcd.sh builds build/bin/etcd; $VIRTKIT_ETCD_BIN overrides); without
// one they are skipped with a message, or fail under VIRTKIT_STRICT=1.
//
//	hack/etcd.sh && go test -tags faults -v ./test/faults/
package faults
