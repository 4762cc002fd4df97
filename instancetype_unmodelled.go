package virtkit

// The types below are fields of KubeVirt's instance types and preferences
// whose VMI counterpart virtkit does not model. They decode (strictly, with
// KubeVirt's JSON names) so that every published instance type and
// preference loads; expanding one that sets them into a VM's template is
// an error naming the field (see instancetype_unmodelled_apply.go).

// GPU is a GPU passed through to the guest, by device plugin resource
// name or by a dynamic resource claim.
type GPU struct {
	Name              string       `json:"name"`
	DeviceName        string       `json:"deviceName,omitempty"`
	ClaimName         *string      `json:"claimName,omitempty"`
	RequestName       *string      `json:"requestName,omitempty"`
	VirtualGPUOptions *VGPUOptions `json:"virtualGPUOptions,omitempty"`
	Tag               string       `json:"tag,omitempty"`
}

// HostDevice is a host PCI or USB device passed through to the guest.
type HostDevice struct {
	Name        string  `json:"name"`
	DeviceName  string  `json:"deviceName,omitempty"`
	ClaimName   *string `json:"claimName,omitempty"`
	RequestName *string `json:"requestName,omitempty"`
	Tag         string  `json:"tag,omitempty"`
}

// VGPUOptions are a mediated GPU's options.
type VGPUOptions struct {
	Display *VGPUDisplayOptions `json:"display,omitempty"`
}

// VGPUDisplayOptions say whether a mediated GPU drives the display.
type VGPUDisplayOptions struct {
	Enabled *bool         `json:"enabled,omitempty"`
	RamFB   *FeatureState `json:"ramFB,omitempty"`
}

// IOThreadsPolicy is how a guest's disks get IO threads.
type IOThreadsPolicy string

// IO thread policies. Shared (one thread for the disks that ask for no
// dedicated one) is what virtkit's domain builder does.
const (
	IOThreadsPolicyShared           IOThreadsPolicy = "shared"
	IOThreadsPolicyAuto             IOThreadsPolicy = "auto"
	IOThreadsPolicySupplementalPool IOThreadsPolicy = "supplementalPool"
)

// DiskIOThreads sizes the supplementalPool policy's thread pool.
type DiskIOThreads struct {
	SupplementalPoolThreadCount *uint32 `json:"supplementalPoolThreadCount,omitempty"`
}

// LaunchSecurity asks for a confidential guest.
type LaunchSecurity struct {
	SEV *SEV      `json:"sev,omitempty"`
	SNP *SEVSNP   `json:"snp,omitempty"`
	TDX *TDXGuest `json:"tdx,omitempty"`
}

// SEV is AMD Secure Encrypted Virtualization.
type SEV struct {
	Policy      *SEVPolicy      `json:"policy,omitempty"`
	Attestation *SEVAttestation `json:"attestation,omitempty"`
	Session     string          `json:"session,omitempty"`
	DHCert      string          `json:"dhCert,omitempty"`
}

// SEVPolicy is SEV's guest policy.
type SEVPolicy struct {
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
	Custom      *CustomBlockSize `json:"custom,omitempty"`
	MatchVolume *FeatureState    `json:"matchVolume,omitempty"`
}

// CustomBlockSize gives block sizes in bytes.
type CustomBlockSize struct {
	Logical            uint  `json:"logical,omitempty"`
	Physical           uint  `json:"physical,omitempty"`
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
