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
//     [github.com/virtkit/virtkit/domain.BuildContext], starts a virtiofsd per
//     virtiofs share ([VirtiofsOptions]; a hypervisor that models shares
//     itself, as the simulator does, serves them instead), creates the
//     downward metrics disk and channel ([DownwardMetricsOptions]; kept
//     current while the domain exists), defines and starts the domain
//     (paused for startStrategy Paused).
//   - While the domain exists it maps the domain's state and reason to the
//     phase (Running; Succeeded or Failed when it stops, following KubeVirt's
//     rules), and keeps the Ready, Paused, AgentConnected,
//     AgentVersionNotSupported and LiveMigratable conditions, activePods,
//     interfaces, guestOSInfo, currentCPUTopology, memory and machine current.
//   - A running VMI whose cpu.sockets or memory.guest changed (the VM
//     controller's LiveUpdate) gets vCPUs plugged and its virtio-mem
//     device's requested size set through the hypervisor's
//     [github.com/virtkit/virtkit/hypervisor.ResourceHotplugger];
//     currentCPUTopology and memory report what the domain has. A change
//     that fails is recorded as a HotVCPUChange or HotMemoryChange
//     condition with status False and a Warning event, and not retried.
//   - Pause and soft reboot are requested with annotations on the VMI
//     (virtkit.PauseRequestAnnotation, virtkit.SoftRebootRequestAnnotation),
//     because there is no API server to call the node directly.
//   - A deleted VMI's guest is asked to power off through ACPI (event
//     ShuttingDown), asked again every ShutdownPoll while it runs on, and
//     destroyed once its grace period (spec.terminationGracePeriodSeconds,
//     default 30 s, or a shorter non-zero deletionGracePeriodSeconds) has
//     passed since the first request (event Deleted). A guest that powered
//     off ends Succeeded, a destroyed one Failed (a guest without ACPI is
//     destroyed at once and ends Succeeded). Then the domain is undefined
//     and the finalizer removed so the store can drop the VMI.
//
// # Guest agents
//
// [NewGuestAgentSource] follows the guest agents of a host's running
// domains with one pool: a bounded set of workers (Workers, default
// [DefaultGuestAgentWorkers]) fed by one schedule of due polls, KubeVirt's
// per-command intervals kept and each wait jittered, so the cost does not
// grow by goroutines and timers per guest. When a guest's agent connects,
// its first poll runs before the status is written, so that write already
// carries the guest OS, interfaces and agent support; later changes are
// pushed to the agent as events. The facts of a domain the agent defined
// (UUID, interfaces, virtkit metadata) come from the definition it built,
// not from reading its XML back.
//
// What a guest agent reports is untrusted: [Endpoint] port-forwards dial
// only the addresses the node's network assigned to the VMI (an
// [InterfaceAddresser]'s leases), or listed addresses inside
// EndpointOptions.AllowedNetworks, and never loopback, link-local, the
// metadata address or the node's own addresses outside those networks.
// A hypervisor that reaches its guests its own way (a
// hypervisor.GuestDialer, the simulator) is dialled through instead, with
// the address the node assigned if any; when it also models the guest's
// services (a hypervisor.GuestConfigurer) it first gets the VMI's
// annotations and cloud-init user-data.
//
// # What the agent watches and when it refreshes status
//
// An agent watches only the VMIs placed on its node (the
// kubevirt.io/nodeName label) and those migrating to it (the
// kubevirt.io/migrationTargetNodeName label); on etcd a watch with a label
// selector skips, without decoding them, the values that cannot match, so
// an agent's cost follows its own guests, not the fleet. A running VMI's
// status is refreshed by events: the hypervisor's domain and agent-channel
// events, the guest-agent pool's change callbacks and writes to the VMI.
// Options.StatusInterval is only the safety net for what no event
// announces, jittered (Options.StatusJitter) so that guests started
// together are not refreshed together.
//
// # Ownership
//
// An agent touches only the domains that are its own: those whose virtkit
// metadata (the builder's <kubevirt xmlns="http://kubevirt.io"> element in
// <metadata>) names this node in <node>, or names the uid of a VMI placed on
// this node, migrating to it, or just migrated away from it (a guest that
// arrived by live migration names its source node). The uid is the VMI
// incarnation's: a VM re-created under the same name keeps its firmware
// UUID, so the agent reads a domain's metadata again whenever the cached
// copy would refuse it. Everything else on the host, other people's
// guests on a shared libvirt host, domains without virtkit's metadata,
// another node agent's guests on the same hypervisor, is never adopted,
// stopped, redefined or removed; it is logged once and listed by
// [Agent.ForeignDomains]. A VMI whose domain name is taken by such a domain
// is not started ([ErrDomainNotOwned]).
//
// A live migration sends the guest with the target node in its metadata
// (the destination XML), so a guest that arrived here is this agent's by
// what the host alone says, like one it started: it is removed when its
// VMI is gone or has moved, and fencing stops it. A guest that arrived
// from an agent of an earlier version still names its source node; the
// target's agent owns it through the VMI's uid. A shut-off domain with virtkit metadata whose VMI
// is gone (or is another incarnation) is removed whatever node it names: it
// would otherwise take the name of a re-created VMI forever. A running one
// is never removed.
//
// After a live migration the old source removes the shut-off copy the
// migration left (when the hypervisor kept its definition), and the target
// of a failed or cancelled migration removes its half-arrived domain; a
// guest that runs there (the job completed after its source agent lost
// track of it) is kept while the VMI runs on and destroyed once the VMI
// has failed or is deleted. A source agent that no longer watches a
// migration it started (it restarted, or could not write the outcome)
// looks at its host: a guest that is gone, or shut off as migrated, left
// by that migration, so it records the migration's end and the target
// takes the VMI over; a guest still running here fails the migration. When
// a migration fails, the source agent resumes a guest the job left paused
// for its switchover; the migration monitor's pause never outlives the
// migration.
//
// A domain of this node that no VMI on it wants (the VMI was deleted,
// moved, or re-created with a new uid while the agent was away) is
// destroyed: a guest never runs twice. On start the agent looks at every
// domain on the host, adopting its own and removing its own leftovers, so a
// restarted agent neither loses nor duplicates a guest.
//
// # Heartbeat and fencing
//
// At start-up the agent registers its Node, retrying with a growing
// pause (1 s up to 30 s) while the store cannot be reached; until then it
// touches no guest.
//
// The agent keeps its Node object current: capacity from the hypervisor, a
// Ready condition and a heartbeat every HeartbeatInterval. A deleted Node is
// registered again by the next heartbeat.
//
// The heartbeat is the agent's lease. When the agent has not renewed it for
// Options.FenceTimeout (default six heartbeat intervals, at least 10 s) it
// fences itself: it destroys every active guest of this node, starts none
// (errors wrap [ErrFenced]) until a renewal succeeds, and then reports the
// fenced guests' VMIs Failed rather than starting them again. The deadline
// counts from the start of the renewal that first wrote the heartbeat
// value the store holds, so the controller cannot have seen that value
// earlier. The agent publishes the fence timeout on its Node
// (virtkit.FenceTimeoutAnnotation) and the node-health controller waits
// virtkit.MinNodeGrace of it (1.5 x) after the last heartbeat change
// before it restarts the node's VMIs elsewhere: by then the guests here are
// gone. A frozen or killed agent cannot fence; Options.Watchdog covers it
// where the host has a watchdog (the simulated hypervisor's, petted on every
// renewal, stops the guests a tenth of the fence timeout after the agent's
// own deadline). libvirt hosts get no watchdog from virtkit: a frozen or
// killed agent's guests keep running until a host watchdog (e.g. Linux
// softdog resetting the machine) stops them, which virtkit neither
// configures nor tests.
//
// # Observing a host
//
// [Agent.HostDomains] reads what the hypervisor really runs, straight from
// it (no store involved): each domain's state, whether it is active (any
// state with a running guest: running, paused, blocked, shutting down,
// suspended), its virtkit metadata (node, VMI uid) and whether this agent
// owns it. `virtkit node --metrics-addr ADDR` serves it as JSON at
// GET /debug/domains, with the agent's fenced state and fence count, the
// foreign domains and, for --hypervisor sim, the watchdog's deadline; its
// /metrics adds virtkit_node_fenced, virtkit_node_fences_total and
// virtkit_node_foreign_domains. A test that looks for guests running on
// two nodes at once counts a domain as running on a node when it is active
// in that node's /debug/domains. A process that is stopped (SIGSTOP)
// answers nothing; once it runs again its first answer already reflects the
// watchdog: the simulated host fires it lazily, before any read, so a
// guest whose deadline passed is never reported running. An observer that
// cannot reach a node counts the guests of its last answer as running
// until the watchdog deadline of that answer (watchdog.deadline; without a
// watchdog, until the node answers again) and as stopped after it.
package node
