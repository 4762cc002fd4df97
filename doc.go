// +k8s:openapi-gen=true

// Package virtkit is virtkit's object model: KubeVirt's kinds, with
// KubeVirt's JSON names, enum strings, defaults and admission rules, so a
// kubevirt.io/v1 manifest of a supported feature means the same thing here
// as in a Kubernetes cluster running KubeVirt.
//
// Everything else in virtkit (stores, reconcilers, the node agent, the
// domain builder, metrics) speaks these types. The package imports only the
// standard library, k8s.io/apimachinery, k8s.io/api/core/v1 (for the core
// kinds ConfigMap, Secret and ServiceAccount) and sigs.k8s.io/yaml, so
// embedding it costs no more than the types a Kubernetes-based caller
// already has.
//
// The package also holds the protocol between virtkit's controllers and
// its node agents, which meet only on these objects: the annotations,
// finalizers and taints both sides read and write ([NodeAgentFinalizer],
// [PauseRequestAnnotation], [FenceTimeoutAnnotation], [DrainTaintKey],
// ...), the event reasons they record, the failure reasons of migrations
// and KubeVirt's cluster migration defaults
// ([ClusterMigrationConfiguration]), as KubeVirt keeps them in its API
// package.
//
// The Go doc comments of the types and their fields are the API
// documentation: package apiserver/openapi turns them into the OpenAPI
// schemas (kubectl explain) of virtkit's API server, and the +listType
// markers on list fields give server-side apply KubeVirt's merge rules.
//
// # Where to start
//
// Package [github.com/virtkit/virtkit/cluster] runs a whole control plane in
// one process (a memory store, the built-in controllers, simulated hosts)
// and is the shortest path to a running guest:
//
//	c, err := cluster.New(cluster.Options{}) // memory store, two simulated hosts
//	go c.Start(ctx)
//	err = c.Apply(ctx, vm) // a *virtkit.VirtualMachine, or objects from Decode
//	err = actions.Start(ctx, c.Store(), store.Key{Namespace: "default", Name: "hello"}, actions.StartOptions{})
//	vmi, err := c.WaitForVMI(ctx, "default", "hello", cluster.VMIPhaseIs(virtkit.Running))
//
// Its examples show the whole walk. Every part of that cluster is an
// extension point set through cluster.Options: the object store
// (store.Store; store/etcd for a control plane spanning hosts), reconcilers
// (reconcile.Reconciler, replacing a built-in one or running next to
// them), placement (scheduler.Scheduler), the hypervisor of each host
// (hypervisor.Hypervisor; hypervisor/sim and hypervisor/libvirt are the
// built-in ones) and the live-migration policy (migration.Policy).
// docs/extending.md in the repository shows how to write each one.
//
// # Kinds
//
// [VirtualMachineInstance] (VMI) is one guest; [VirtualMachine] (VM) keeps
// a VMI running according to its run strategy; [VirtualMachineInstanceReplicaSet]
// keeps N VMIs from one template; [VirtualMachineInstanceMigration] asks for
// one live migration; [MigrationPolicy] (migrations.kubevirt.io/v1alpha1,
// cluster-scoped) tunes migrations of the VMIs it selects. [Node]
// (virtkit.io/v1alpha1, cluster-scoped) is virtkit's own kind for a host
// that runs VMIs, kept current by its agent.
// [VirtualMachineInstancetype] and [VirtualMachinePreference] (and their
// cluster-scoped kinds, instancetype.kubevirt.io/v1beta1) size a VM and
// give its template defaults; [ApplyInstancetype] expands them, and the VM
// controller keeps the ones a VM started with in a [ControllerRevision].
// [CommonInstancetypes] is KubeVirt's common catalogue (u1.small, fedora,
// ...), embedded as data.
//
// Every kind has Spec, Status and a List type, embeds metav1.TypeMeta and
// metav1.ObjectMeta and has generated DeepCopy methods
// (zz_generated.deepcopy.go, `go generate`), so each is an [Object] and a
// runtime.Object a Kubernetes scheme can register. [KnownKinds], [NewObject]
// and [GVKOf] map between kinds and Go types.
//
// Status is the contract between components: phases ([VirtualMachineInstancePhase],
// [VirtualMachineInstanceMigrationPhase]), [Condition]s with typed
// [ConditionType]s and reasons, status.activePods (domain id to node, two
// entries during a migration) and status.migrationState, which carries
// virtkit's own migration-engine report in [MigrationEngineStatus] under the
// JSON key virtkitEngine.
//
// # From manifest to admitted object
//
// A manifest goes through four separate, pure steps, the same ones
// KubeVirt's API server and webhooks apply:
//
//  1. [Decode] reads multi-document YAML or JSON and returns typed objects.
//     It is strict: a field virtkit does not model is a [*DecodeError] that
//     names the document and the full path (for example
//     spec.template.spec.domain.devices.gpus) and wraps [ErrUnknownField]
//     (and [ErrNotSupported] for a KubeVirt field virtkit does not model),
//     never a silently dropped setting. [Encode] writes objects back.
//  2. [SetDefaults] fills unset fields in KubeVirt's order: machine type,
//     memory and CPU topology, the default pod network with a bridge
//     interface, a disk per volume, disk bus, CD-ROM and probe defaults,
//     firmware UUID (random for a VMI, the UUIDv5 of the name for a VM),
//     Hyper-V dependencies, and the hot-plug room of KubeVirt's LiveUpdate
//     rollout (cpu.maxSockets, memory.maxGuest). Like KubeVirt's mutators
//     it gives a VM's template only its architecture, machine type and
//     firmware identity, and a replica set's template nothing: each VMI is
//     defaulted when it is made. [DefaultOptions] plays the role of
//     KubeVirt's cluster configuration and lets tests inject the UUID source.
//  3. [Validate] returns a field.ErrorList with full dotted paths from the
//     object root ([i] for list indexes, [key] for map keys, .cpu and
//     .memory for resource names, as KubeVirt writes them) and KubeVirt's
//     rules: disks and volumes, buses, boot order, memory and CPU, EFI and
//     SMM, interfaces and networks, cloud-init, probes, scheduling, DNS,
//     run strategy, replica-set selectors, migration policies. Callers
//     match errors by path and type.
//  4. [AdmitCreate] and [AdmitUpdate] are what a request from a user (not
//     from virtkit's own controllers) must pass besides: status dropped on
//     create and kept on update, reserved kubevirt.io/ labels refused, a
//     VMI's and a migration's spec immutable (see Admission below).
//
// Decode also refuses a key given twice in one object (YAML and JSON), and
// Validate bounds what would overflow further down: at most [MaxVCPUs]
// vCPUs, memory below 2^63 bytes.
//
// # Admission
//
// Admission is what stands between a user's request and the store, on top
// of defaulting and [Validate]: the rules KubeVirt's API server and its
// webhooks apply to requests that do not come from KubeVirt's own service
// accounts. virtkit's controllers and node agents write to the store
// directly and are not subject to it; every path that stores an object on
// a user's behalf (cluster.Apply, `virtkit apply`, a caller's own API
// server) must call [AdmitCreate] before creating an object and
// [AdmitUpdate] before replacing one; the admission package's chain does,
// after defaulting and [Validate].
//
// Status on create, per kind:
//
//   - VirtualMachine, VirtualMachineInstanceReplicaSet,
//     VirtualMachineInstanceMigration, MigrationPolicy and DataVolume have a
//     status subresource in KubeVirt and CDI, so the API server drops the
//     status of a create and keeps the stored status on an update.
//   - VirtualMachineInstance has no status subresource, but KubeVirt's
//     mutating webhook resets the phase on create and restores the old
//     status on an update by a user. virtkit drops the whole status on
//     create: its node agents act on status.nodeName and the
//     kubevirt.io/nodeName label, so nothing a user writes there may reach
//     them.
//   - Node follows Kubernetes, which lets a node register with its status.
//
// Metadata: the reserved kubevirt.io/ labels ([ReservedLabels]) may be set
// by controllers only, on a VMI and on the VMI templates of VMs and
// ReplicaSets; the annotations that switch on features KubeVirt gates
// behind feature gates virtkit does not implement (Ignition data, hook
// sidecars) are refused. Fields KubeVirt gates behind a feature gate of
// its configuration are checked by [AdmitFeatureGates] against a
// [KubeVirt] object's feature gates ([FeatureGates]).
//
// Updates: a VMI's spec is immutable for users except for hot-pluggable
// volumes and their disks, which may be added (a disk on the scsi bus) and
// removed (volume hotplug). KubeVirt lets only its own service accounts
// change the rest, as its VM controller does for CPU and memory hot-plug;
// virtkit's VM controller writes such changes to the store itself. A
// migration's spec is immutable; labels and annotations other than the
// reserved ones may change. A node's name must be a DNS-1123 label ([Validate]):
// it becomes a label value and a column in printed tables.
//
// # Pure status logic
//
// The rules that turn observations into status are plain functions of
// their inputs, with the time passed in: [SetCondition], [GetCondition] and
// [RemoveCondition] report whether anything changed; [PrintableStatus]
// evaluates KubeVirt's ordered printable-status list (first match wins);
// [VirtualMachine.RunStrategy] resolves running versus runStrategy; VMI
// predicates ([VirtualMachineInstance.IsFinal], [VirtualMachineInstance.IsMigratable],
// [VirtualMachineInstance.WantsToHaveQOSGuaranteed], ...) and phase helpers
// record transitions.
//
// # Errors
//
// Errors wrap the sentinels [ErrUnknownKind], [ErrUnknownField],
// [ErrInvalidManifest], [ErrNotSupported] and [ErrRunStrategy]; branch with
// errors.Is.
package virtkit
