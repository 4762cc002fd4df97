package virtkit

// The types below are parts of a VMI that depend on what its node has:
// devices passed through from the host, confidential computing, guest
// NUMA, realtime vCPUs, IO thread policies, panic and sound devices and
// disk block sizes. They decode with KubeVirt's JSON names, instance types
// and preferences apply them, and validation checks their own rules. A
// node whose domain builder cannot honour one fails the VMI with the
// field's path.

// GPU is a GPU passed through to the guest, by device plugin resource
// name or by a dynamic resource claim.
type GPU struct {
	// Name is the device's name in the VMI.
	Name string `json:"name"`
	// DeviceName is the resource name of the GPU on the host.
	DeviceName string `json:"deviceName,omitempty"`
	// ClaimName names the resource claim the device comes from.
	ClaimName *string `json:"claimName,omitempty"`
	// RequestName names the request of the resource claim.
	RequestName *string `json:"requestName,omitempty"`
	// VirtualGPUOptions configures a mediated (virtual) GPU.
	VirtualGPUOptions *VGPUOptions `json:"virtualGPUOptions,omitempty"`
	// Tag is a device role tag passed to the guest in the metadata.
	Tag string `json:"tag,omitempty"`
}

// HostDevice is a host PCI or USB device passed through to the guest.
type HostDevice struct {
	// Name is the device's name in the VMI.
	Name string `json:"name"`
	// DeviceName is the resource name of the device on the host.
	DeviceName string `json:"deviceName,omitempty"`
	// ClaimName names the resource claim the device comes from.
	ClaimName *string `json:"claimName,omitempty"`
	// RequestName names the request of the resource claim.
	RequestName *string `json:"requestName,omitempty"`
	// Tag is a device role tag passed to the guest in the metadata.
	Tag string `json:"tag,omitempty"`
}

// VGPUOptions are a mediated GPU's options.
type VGPUOptions struct {
	// Display configures the virtual GPU's display.
	Display *VGPUDisplayOptions `json:"display,omitempty"`
}

// VGPUDisplayOptions say whether a mediated GPU drives the display.
type VGPUDisplayOptions struct {
	// Enabled uses the virtual GPU as the guest's display.
	Enabled *bool `json:"enabled,omitempty"`
	// RamFB adds a RAM framebuffer for the display at boot.
	RamFB *FeatureState `json:"ramFB,omitempty"`
}

// IOThreadsPolicy is how a guest's disks get IO threads.
type IOThreadsPolicy string

// IO thread policies.
const (
	IOThreadsPolicyShared           IOThreadsPolicy = "shared"
	IOThreadsPolicyAuto             IOThreadsPolicy = "auto"
	IOThreadsPolicySupplementalPool IOThreadsPolicy = "supplementalPool"
)

// DiskIOThreads sizes the supplementalPool policy's thread pool.
type DiskIOThreads struct {
	// SupplementalPoolThreadCount is the size of the shared I/O thread pool.
	SupplementalPoolThreadCount *uint32 `json:"supplementalPoolThreadCount,omitempty"`
}

// LaunchSecurity asks for a confidential guest.
type LaunchSecurity struct {
	// SEV runs the guest with AMD Secure Encrypted Virtualization.
	SEV *SEV `json:"sev,omitempty"`
	// SNP runs the guest with AMD SEV Secure Nested Paging.
	SNP *SEVSNP `json:"snp,omitempty"`
	// TDX runs the guest with Intel Trust Domain Extensions.
	TDX *TDXGuest `json:"tdx,omitempty"`
}

// SEV is AMD Secure Encrypted Virtualization.
type SEV struct {
	// Policy is the guest's SEV policy.
	Policy *SEVPolicy `json:"policy,omitempty"`
	// Attestation asks for the guest's launch to be attested.
	Attestation *SEVAttestation `json:"attestation,omitempty"`
	// Session is the base64 encoded launch session blob.
	Session string `json:"session,omitempty"`
	// DHCert is the base64 encoded guest owner's Diffie-Hellman key.
	DHCert string `json:"dhCert,omitempty"`
}

// SEVPolicy is SEV's guest policy.
type SEVPolicy struct {
	// EncryptedState also encrypts the guest's CPU state (SEV-ES).
	EncryptedState *bool `json:"encryptedState,omitempty"`
}

// SEVAttestation asks for SEV's attestation flow.
type SEVAttestation struct{}

// SEVSNP is AMD SEV Secure Nested Paging.
type SEVSNP struct{}

// TDXGuest is Intel Trust Domain Extensions.
type TDXGuest struct{}

// NUMA is the guest's NUMA topology.
type NUMA struct {
	// GuestMappingPassthrough mirrors the host NUMA nodes of the
	// guest's dedicated CPUs.
	GuestMappingPassthrough *NUMAGuestMappingPassthrough `json:"guestMappingPassthrough,omitempty"`
}

// NUMAGuestMappingPassthrough is the passthrough NUMA mapping.
type NUMAGuestMappingPassthrough struct{}

// Realtime tunes vCPUs for realtime workloads.
type Realtime struct {
	// Mask is the vCPUs that run with a realtime scheduler (all when
	// empty).
	Mask string `json:"mask,omitempty"`
}

// BlockSize is a disk's logical and physical block sizes.
type BlockSize struct {
	// Custom sets the block sizes explicitly.
	Custom *CustomBlockSize `json:"custom,omitempty"`
	// MatchVolume takes the block sizes from the volume.
	MatchVolume *FeatureState `json:"matchVolume,omitempty"`
}

// CustomBlockSize gives block sizes in bytes.
type CustomBlockSize struct {
	// Logical is the logical block size, in bytes.
	Logical uint `json:"logical,omitempty"`
	// Physical is the physical block size, in bytes.
	Physical uint `json:"physical,omitempty"`
	// DiscardGranularity is the discard granularity, in bytes.
	DiscardGranularity *uint `json:"discardGranularity,omitempty"`
}

// PanicDeviceModel is the model of a guest panic device.
type PanicDeviceModel string

// Panic device models.
const (
	PanicDeviceHyperv  PanicDeviceModel = "hyperv"
	PanicDeviceIsa     PanicDeviceModel = "isa"
	PanicDevicePvpanic PanicDeviceModel = "pvpanic"
)

// PanicDevice is a device through which the guest reports a panic.
type PanicDevice struct {
	// Model is the device's model: isa, hyperv or pvpanic.
	Model *PanicDeviceModel `json:"model,omitempty"`
}

// SoundDevice is an emulated sound card.
type SoundDevice struct {
	// Name is the device's name.
	Name string `json:"name"`
	// Model is ich9 (the default) or ac97.
	Model string `json:"model,omitempty"`
}
