package virtkit

// Node labels that describe a host's CPU for migration placement. The node
// agent publishes them from its hypervisor; the migration controller turns
// the source's into a requirement on the target. The kubevirt.io prefixes
// are KubeVirt's node-labeller names (value "true").
const (
	// CPUModelLabelPrefix + model: guests may use the named model here.
	CPUModelLabelPrefix = "cpu-model.node.kubevirt.io/"
	// CPUModelMigrationLabelPrefix + model: guests with that model (or a
	// host-model guest whose source expanded host-model to it) may migrate
	// here.
	CPUModelMigrationLabelPrefix = "cpu-model-migration.node.kubevirt.io/"
	// HostModelCPULabelPrefix + model: host-model expands to this model here.
	HostModelCPULabelPrefix = "host-model-cpu.node.kubevirt.io/"
	// CPUVendorLabelPrefix + vendor: the host CPU's vendor.
	CPUVendorLabelPrefix = "cpu-vendor.node.kubevirt.io/"
	// HostCPUSignatureLabel is a short hash of the exact host CPU (model,
	// vendor, feature set): host-passthrough guests migrate only between
	// nodes with the same value.
	HostCPUSignatureLabel = "node.virtkit.io/host-cpu-signature"
	// HostCPUSourceLabel says where the CPU labels come from: "hardware"
	// (read from libvirt's capabilities) or "modelled" (a simulated host's
	// configured capability). Its presence means the node publishes its CPU.
	HostCPUSourceLabel = "node.virtkit.io/host-cpu-source"
)

// Values of HostCPUSourceLabel.
const (
	HostCPUSourceHardware = "hardware"
	HostCPUSourceModelled = "modelled"
)

// Node labels that say a node's platform runs confidential guests
// (spec.domain.launchSecurity), as KubeVirt's node labeller sets the SEV
// ones (SNP and TDX: the labels virtkit uses for the same purpose). The
// value does not matter.
const (
	SEVLabel    = "kubevirt.io/sev"
	SEVESLabel  = "kubevirt.io/sev-es"
	SEVSNPLabel = "kubevirt.io/sev-snp"
	TDXLabel    = "kubevirt.io/tdx"
)
