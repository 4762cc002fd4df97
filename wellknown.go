package virtkit

// API groups, versions and kinds.
const (
	GroupName            = "kubevirt.io"
	APIVersion           = "kubevirt.io/v1"
	MigrationsGroupName  = "migrations.kubevirt.io"
	MigrationsAPIVersion = "migrations.kubevirt.io/v1alpha1"
	VirtkitGroupName     = "virtkit.io"
	VirtkitAPIVersion    = "virtkit.io/v1alpha1"

	KindVirtualMachine                   = "VirtualMachine"
	KindVirtualMachineInstance           = "VirtualMachineInstance"
	KindVirtualMachineInstanceMigration  = "VirtualMachineInstanceMigration"
	KindVirtualMachineInstanceReplicaSet = "VirtualMachineInstanceReplicaSet"
	KindMigrationPolicy                  = "MigrationPolicy"
	KindNode                             = "Node"
)

// Well-known labels.
const (
	AppLabel                              = "kubevirt.io"
	CreatedByLabel                        = "kubevirt.io/created-by"
	NodeNameLabel                         = "kubevirt.io/nodeName"
	MigrationTargetNodeNameLabel          = "kubevirt.io/migrationTargetNodeName"
	MigrationJobLabel                     = "kubevirt.io/migrationJobUID"
	MigrationSelectorLabel                = "kubevirt.io/vmi-name"
	NodeSchedulable                       = "kubevirt.io/schedulable"
	InstallStrategyLabel                  = "kubevirt.io/install-strategy"
	VirtualMachineLabel                   = "kubevirt.io/vm"
	VirtualMachineInstanceReplicaSetLabel = "kubevirt.io/vmReplicaSet"
	// VolumesUpdateMigrationLabel marks a migration the VM controller
	// created to copy a VM's changed volumes to their new claims; its value
	// is the VMI's name.
	VolumesUpdateMigrationLabel = "kubevirt.io/volume-update-migration"
	// HostnameLabel is the node label for per-node topology.
	HostnameLabel = "kubernetes.io/hostname"
)

// reservedLabels may be set on a VMI only by virtkit's own controllers:
// AdmitCreate and AdmitUpdate refuse them from users.
var reservedLabels = [...]string{
	CreatedByLabel, MigrationJobLabel, NodeNameLabel,
	MigrationTargetNodeNameLabel, NodeSchedulable, InstallStrategyLabel,
}

// ReservedLabels returns the labels only controllers may set on a VMI.
func ReservedLabels() []string { return append([]string(nil), reservedLabels[:]...) }

// Well-known annotations.
const (
	VMGenerationAnnotation                            = "kubevirt.io/vm-generation"
	AllowPodBridgeNetworkLiveMigrationAnnotation      = "kubevirt.io/allow-pod-bridge-network-live-migration"
	EvacuationMigrationAnnotation                     = "kubevirt.io/evacuationMigration"
	EvictionSourceAnnotation                          = "kubevirt.io/eviction-source"
	CreateMigrationTarget                             = "kubevirt.io/create-migration-target"
	RestoreRunStrategy                                = "kubevirt.io/restore-run-strategy"
	MigrationJobNameAnnotation                        = "kubevirt.io/migrationJobName"
	MigrationUnschedulablePodTimeoutSecondsAnnotation = "kubevirt.io/migrationUnschedulablePodTimeoutSeconds"
	MigrationPendingPodTimeoutSecondsAnnotation       = "kubevirt.io/migrationPendingPodTimeoutSeconds"
)

// Finalizers.
const (
	VirtualMachineControllerFinalizer        = "kubevirt.io/virtualMachineControllerFinalize"
	VirtualMachineInstanceFinalizer          = "kubevirt.io/foregroundDeleteVirtualMachine"
	VirtualMachineInstanceMigrationFinalizer = "kubevirt.io/migrationJobFinalize"
	// DeprecatedVirtualMachineInstanceFinalizer is the unprefixed form older
	// KubeVirt releases set; controllers remove it too.
	DeprecatedVirtualMachineInstanceFinalizer = "foregroundDeleteVirtualMachine"
)

// Defaults.
const (
	DefaultGracePeriodSeconds    int64  = 30
	DefaultMachineType                  = "q35"
	DefaultArchitecture                 = "amd64"
	DefaultCPUModel                     = CPUModeHostModel
	DefaultNetworkName                  = "default"
	DefaultHypervSpinlocks       uint32 = 4096
	DefaultProbeTimeoutSeconds   int32  = 1
	DefaultProbePeriodSeconds    int32  = 10
	DefaultProbeSuccessThreshold int32  = 1
	DefaultProbeFailureThreshold int32  = 3
	DefaultVMNetworkCIDR                = "10.0.2.0/24"
	DefaultVMIPv6NetworkCIDR            = "fd10:0:2::/120"
)

// FirmwareUUIDNamespace is the UUIDv5 namespace KubeVirt uses to derive a
// VM's stable firmware UUID from its name.
const FirmwareUUIDNamespace = "6a1a24a1-4061-4607-8bf4-a3963d0c5895"
