// Package scheduler picks a node for a VirtualMachineInstance.
//
// [Scheduler] is the port: the VMI placement controller hands it the VMI,
// the candidate Node objects and the VMIs already placed, and gets a node
// name back. Callers bring their own implementation (bin packing, GPUs,
// licences) or use [Default], which mirrors the parts of kube-scheduler
// that matter for VMs:
//
// Filters, in this order (the first that fails names the node's reason):
//   - the node is Ready (its Ready condition is True and its heartbeat is
//     fresh),
//   - the node is schedulable (spec.unschedulable unset, or tolerated via
//     node.kubernetes.io/unschedulable:NoSchedule),
//   - every NoSchedule/NoExecute taint is tolerated,
//   - spec.nodeSelector and the required node affinity terms match,
//   - the VMI's cpu and memory requests fit into allocatable minus the
//     requests of the VMIs already there,
//   - required VMI affinity and anti-affinity hold, including the
//     anti-affinity of VMIs already placed (symmetry).
//
// Score (higher wins, ties go to the lexically smallest node name so results
// are reproducible): least-allocated cpu and memory after placement
// (0..100), plus preferred node affinity and preferred VMI (anti-)affinity,
// each normalised to 0..100 across the feasible nodes, minus a penalty for
// untolerated PreferNoSchedule taints.
//
// When no node fits, Schedule returns an error wrapping [ErrUnschedulable]
// with kube-scheduler's message shape, e.g.
// "0/3 nodes are available: 1 Insufficient memory, 2 node(s) had untolerated
// taint {kubevirt.io/drain: }."
//
// VMI "pods" are VMIs: affinity terms select VMIs by label. Topology key
// kubernetes.io/hostname is the node name unless the node carries that label;
// other keys are node labels, and a node without the key is in no domain.
// A VMI's requests are spec.domain.resources.requests (falling back to
// limits, and for memory to spec.domain.memory.guest); virtkit adds no
// launcher overhead.
//
// Schedule is stateless: every call sums the requests of the VMIs passed as
// placed, which is linear in their number. A caller that sees every change
// of every VMI (the VMI placement controller does, through its watch) uses
// [Default.NewPlacements] instead: a [Placements] keeps per-node usage, an
// index of placed VMIs by label and the set of placed VMIs with required
// anti-affinity up to date as VMIs are observed and forgotten, decides
// exactly as Schedule would, and reserves the chosen node under its lock
// before returning, so parallel decisions cannot over-commit a node.
package scheduler
