// Package scheduler picks a node for a VirtualMachineInstance.
//
// [Scheduler] is the port: the VMI placement controller hands it the VMI,
// the candidate Node objects and the VMIs already placed, and gets a node
// name back. Callers bring their own implementation, or compose one from
// plugins: a [Framework] runs a [Profile] of [FilterPlugin]s (may the VMI
// run on this node?) and [ScorePlugin]s (how good is this node?), with
// optional [PreFilterPlugin] and [ScoreNormalizer] steps, sharing a
// per-decision [CycleState]. [New] is the framework over [DefaultProfile],
// which mirrors the parts of kube-scheduler that matter for VMs, under
// kube-scheduler's plugin names. A user adds plugins of their own to it
// (a bin-packing score, a licence filter) or drops some
// ([Profile.WithoutFilter], [Profile.WithoutScore]), and may call the
// built-in plugins from a scheduler of their own.
//
// Filters, in this order (the first that fails names the node's reason):
//   - NodeReady: the node's Ready condition is True and its heartbeat is
//     fresh,
//   - NodeUnschedulable: spec.unschedulable unset, or tolerated via
//     node.kubernetes.io/unschedulable:NoSchedule,
//   - TaintToleration: every NoSchedule/NoExecute taint is tolerated,
//   - NodeAffinity: spec.nodeSelector and the required node affinity terms
//     match,
//   - NodeResourcesFit: the VMI's cpu and memory requests fit into
//     allocatable minus the requests of the VMIs already there,
//   - NodeDevices: the host device resources the VMI's gpus and
//     hostDevices name are advertised in the node's allocatable with
//     enough left after the VMIs already there ("Insufficient <resource>"),
//   - LaunchSecurity: a confidential VMI's node carries the label of its
//     spec.domain.launchSecurity kind (kubevirt.io/sev, ...),
//   - InterPodAffinity: required VMI affinity and anti-affinity hold,
//     including the anti-affinity of VMIs already placed (symmetry).
//
// Scores (summed, each weight 1; higher wins, ties go to the lexically
// smallest node name so results are reproducible): NodeResourcesFit,
// least-allocated cpu and memory after placement (0..100); NodeAffinity and
// InterPodAffinity, the preferred terms, each normalised to 0..100 across
// the feasible nodes; TaintToleration, minus a penalty for untolerated
// PreferNoSchedule taints. [PodTopologySpread] (spread constraints given to
// the plugin) and NodeResourcesFit's MostAllocated strategy are available
// but not in the default profile.
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
// [Framework.NewPlacements] instead: a [Placements] keeps per-node usage, an
// index of placed VMIs by label and the set of placed VMIs with required
// anti-affinity up to date as VMIs are observed and forgotten, decides
// exactly as Schedule would (with any profile), and reserves the chosen
// node under its lock before returning, so parallel decisions cannot
// over-commit a node. Plugins of a user's own read the placed VMIs through
// [CycleState.EachPlaced], which uses the same label index.
package scheduler
