// Package faults is virtkit's fault-injection suite: the control plane as
// separate operating system processes (two `virtkit controller` replicas
// electing a leader, three `virtkit node` agents on the simulated
// hypervisor) against a real etcd server process, while the suite kills,
// freezes and partitions them.
//
// Scenarios: SIGKILL of the leading controller, of a node agent and of the
// etcd server (restarted on its data directory); SIGSTOP and SIGCONT of a
// node agent; a network partition between a node agent and etcd (each node
// reaches etcd through a TCP proxy the suite cuts and heals); deletes racing
// creates; twenty concurrent appliers on the same and on different objects.
//
// During every scenario and after it the suite checks:
//
//   - no VM runs on two nodes at the same instant: a detector samples
//     every node's running domains every few tens of milliseconds;
//   - no uid belongs to two objects, and a VM nobody deleted keeps its uid;
//   - no object is lost: every VM whose creation was acknowledged is
//     present until the suite deletes it;
//   - eventually every VM (runStrategy Always) has exactly one VMI, Running
//     on a live node, whose guest runs on that node and nowhere else, and no
//     other guest runs anywhere.
//
// A node's running domains are read from the state file of its simulated
// hypervisor (--sim-state), which the node process rewrites atomically on
// every change of a domain's run state. Only processes that run count: the
// guests of a killed or stopped process execute nothing; when the process
// runs again, whatever its state file says runs counts again.
//
// The tests carry the build tag faults and need an etcd server binary
// (hack/etcd.sh builds build/bin/etcd; $VIRTKIT_ETCD_BIN overrides); without
// one they are skipped with a message, or fail under VIRTKIT_STRICT=1.
//
//	hack/etcd.sh && go test -tags faults -v ./test/faults/
package faults
