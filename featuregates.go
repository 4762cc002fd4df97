package virtkit

import (
	"slices"
)

// FeatureGateState is how far along a KubeVirt feature gate is.
type FeatureGateState string

// Feature gate states, as KubeVirt's feature gate registry has them. Alpha
// gates are off unless enabled, beta gates on unless disabled, generally
// available gates always on; deprecated gates are on and discontinued
// ones off.
const (
	FeatureGateAlpha        FeatureGateState = "Alpha"
	FeatureGateBeta         FeatureGateState = "Beta"
	FeatureGateGA           FeatureGateState = "General Availability"
	FeatureGateDeprecated   FeatureGateState = "Deprecated"
	FeatureGateDiscontinued FeatureGateState = "Discontinued"
)

// Names of the feature gates that guard fields virtkit models.
const (
	FeatureGateHostDisk                  = "HostDisk"
	FeatureGateDownwardMetrics           = "DownwardMetrics"
	FeatureGateHostDevices               = "HostDevices"
	FeatureGateGPU                       = "GPU"
	FeatureGateNUMA                      = "NUMA"
	FeatureGatePanicDevices              = "PanicDevices"
	FeatureGateWorkloadEncryptionSEV     = "WorkloadEncryptionSEV"
	FeatureGateWorkloadEncryptionTDX     = "WorkloadEncryptionTDX"
	FeatureGateVirtIOFSStorageVolumes    = "EnableVirtioFsStorageVolumes"
	FeatureGateDeclarativeHotplugVolumes = "DeclarativeHotplugVolumes"
	FeatureGatePasstBinding              = "PasstBinding"
	FeatureGateContainerPathVolumes      = "ContainerPathVolumes"
)

// FeatureGate is one of KubeVirt's feature gates.
//
// +k8s:openapi-gen=false
type FeatureGate struct {
	// Name is the gate's name, as developerConfiguration.featureGates
	// lists it.
	Name string
	// State is how far along the gate is.
	State FeatureGateState
}

// KnownFeatureGates returns KubeVirt's feature gates as of its v1.9
// release, with their states.
func KnownFeatureGates() []FeatureGate {
	var out []FeatureGate
	add := func(s FeatureGateState, names ...string) {
		for _, n := range names {
			out = append(out, FeatureGate{Name: n, State: s})
		}
	}
	add(FeatureGateAlpha, "CPUManager", "ExperimentalIgnitionSupport", "HypervStrictCheck", "Sidecar", FeatureGateHostDevices,
		FeatureGateHostDisk, FeatureGateDownwardMetrics, "Root", FeatureGateWorkloadEncryptionTDX, "VSOCK", "AlignCPUs",
		FeatureGateVirtIOFSStorageVolumes, "PCINUMAAwareTopology", "NetworkDevicesWithDRA", "DecentralizedLiveMigration",
		"ObjectGraph", "UtilityVolumes", "ConfigurableHypervisor", "IncrementalBackup", FeatureGateContainerPathVolumes,
		"ReservedOverheadMemlock", "VGPULiveMigration", "VMStatsCollector", "OCIExport", "Plugins",
		"GraceIOVirtualization", "IOMMUFD", "FirmwareAutoSelection", "MigrationStallDetection",
		"CrossArchitectureVirtualization", "PortRangesSpec")
	add(FeatureGateBeta, "LibvirtHooksServerAndClient", "ImageVolume", "Snapshot", FeatureGateWorkloadEncryptionSEV,
		"KubevirtSeccompProfile", "NodeRestriction", "GPUsWithDRA", "HostDevicesWithDRA", FeatureGateDeclarativeHotplugVolumes,
		FeatureGatePasstBinding, "PodSecondaryInterfaceNamingUpgrade", "ExternalNetResourceInjection", "RebootPolicy", "Template",
		"VmiMemoryOverheadReport", "OptOutRoleAggregation")
	add(FeatureGateGA, "LiveMigration", "SRIOVLiveMigration", "NonRoot", "PSA", "CPUNodeDiscovery", FeatureGateNUMA,
		"CommonInstancetypesDeploymentGate", FeatureGateGPU, "HotplugNICs", "BochsDisplayForEFIGuests", "VMLiveUpdateFeatures",
		"NetworkBindingPlugins", "DynamicPodInterfaceNaming", "VolumesUpdateStrategy", "VolumeMigration",
		"DisableCustomSELinuxPolicy", "AutoResourceLimitsGate", "ClusterProfiler", "VMPersistentState", "VMExport",
		"PersistentReservation", "InstancetypeReferencePolicy", "EnableVirtioFsConfigVolumes", "ExpandDisks",
		FeatureGatePanicDevices, "LiveUpdateNADRef", "VideoConfig", "SecureExecution", "MigrationPriorityQueue")
	add(FeatureGateDeprecated, "DockerSELinuxMCSWorkaround", "MultiArchitecture", "DisableMDEVConfiguration", "HotplugVolumes")
	add(FeatureGateDiscontinued, "ExperimentalVirtiofsSupport", "Passt", "Macvtap", "PasstIPStackMigration")
	return out
}

func lookupFeatureGate(name string) (FeatureGate, bool) {
	for _, g := range KnownFeatureGates() {
		if g.Name == name {
			return g, true
		}
	}
	return FeatureGate{}, false
}

// FeatureGates are a configuration's developerConfiguration.featureGates
// and disabledFeatureGates. The zero value is KubeVirt's default: the
// beta and generally available gates on, the alpha ones off.
//
// +k8s:openapi-gen=false
type FeatureGates struct {
	// Enabled are the gates turned on.
	Enabled []string
	// Disabled are the beta gates turned off.
	Disabled []string
}

// IsEnabled says whether the gate is on, as KubeVirt decides: a gate it
// does not know is off; a generally available (or deprecated) gate is
// on; a listed gate is on, a disabled one off; otherwise a beta gate is
// on and an alpha one off.
func (g FeatureGates) IsEnabled(name string) bool {
	gate, ok := lookupFeatureGate(name)
	switch {
	case !ok || gate.State == FeatureGateDiscontinued:
		return false
	case gate.State == FeatureGateGA || gate.State == FeatureGateDeprecated:
		return true
	case slices.Contains(g.Enabled, name):
		return true
	case slices.Contains(g.Disabled, name):
		return false
	}
	return gate.State == FeatureGateBeta
}

// EnabledGates lists the gates that are on, in KnownFeatureGates' order.
func (g FeatureGates) EnabledGates() []string {
	var out []string
	for _, gate := range KnownFeatureGates() {
		if g.IsEnabled(gate.Name) {
			out = append(out, gate.Name)
		}
	}
	return out
}
