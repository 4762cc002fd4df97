// Package node is virtkit's per-host agent, the virt-handler of KubeVirt:
// one [Agent] per hypervisor host keeps the domains of the VMIs placed on it
// in line with those VMIs and reports what it sees.
//
// # Protocol with the controllers
//
// The placement controller assigns a VMI to a node (status.nodeName, label
// kubevirt.io/nodeName, phase Scheduled). From there the node agent owns the
// VMI's status:
//
//   - Scheduled: it adds the [Finalizer], builds the domain XML with
//     [github.com/virtkit/virtkit/domain.BuildXML], defines and starts the
//     domain (paused for startStrategy Paused).
//   - While the domain exists it maps the domain's state and reason to the
//     phase (Running; Succeeded or Failed when it stops, following KubeVirt's
//     rules), and keeps the Ready, Paused, AgentConnected,
//     AgentVersionNotSupported and LiveMigratable conditions, activePods,
//     interfaces, guestOSInfo, currentCPUTopology, memory and machine current.
//   - Pause and soft reboot are requested with annotations on the VMI
//     (controller.PauseRequestAnnotation, controller.SoftRebootRequestAnnotation),
//     because there is no API server to call the node directly.
//   - A deleted VMI's guest is shut down through ACPI, destroyed once
//     terminationGracePeriodSeconds have passed, its domain undefined, and
//     the finalizer removed so the store can drop the VMI.
//
// A domain on the host that no VMI on this node wants (the VMI was deleted,
// moved, or re-created with a new uid while the agent was away) is
// destroyed: a guest never runs twice. On start the agent looks at every
// domain on the host, adopting its own and removing the rest, so a restarted
// agent neither loses nor duplicates a guest.
//
// The agent also keeps its Node object current: capacity from the
// hypervisor, a Ready condition and a heartbeat.
package node
