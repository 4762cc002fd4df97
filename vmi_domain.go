package virtkit

import (
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// DomainSpec is the virtual hardware.
type DomainSpec struct {
	// Resources are the CPU and memory requests and limits of the VMI.
	Resources ResourceRequirements `json:"resources,omitempty"`
	// CPU is the guest's vCPU topology, model and features.
	CPU *CPU `json:"cpu,omitempty"`
	// Memory is the guest's memory size and backing.
	Memory *Memory `json:"memory,omitempty"`
	// Machine is the emulated machine type.
	Machine *Machine `json:"machine,omitempty"`
	// Firmware is the guest's firmware, boot loader and identity.
	Firmware *Firmware `json:"firmware,omitempty"`
	// Clock is the guest's clock offset and timers.
	Clock *Clock `json:"clock,omitempty"`
	// Features are the hypervisor features exposed to the guest.
	Features *Features `json:"features,omitempty"`
	// Devices are the guest's disks, network interfaces, input and other
	// devices.
	Devices Devices `json:"devices"`
	// IOThreadsPolicy is how disks get IO threads: shared (one thread
	// for the disks that ask for none of their own), auto or
	// supplementalPool.
	IOThreadsPolicy *IOThreadsPolicy `json:"ioThreadsPolicy,omitempty"`
	// IOThreads sizes the supplementalPool policy's thread pool.
	IOThreads *DiskIOThreads `json:"ioThreads,omitempty"`
	// LaunchSecurity asks for a confidential guest (SEV, SNP, TDX; an
	// empty one is s390x Secure Execution).
	LaunchSecurity *LaunchSecurity `json:"launchSecurity,omitempty"`
}

// ResourceRequirements are the VMI's requests and limits (cpu, memory).
type ResourceRequirements struct {
	// Requests are the CPU and memory the VMI needs from its node.
	Requests ResourceList `json:"requests,omitempty"`
	// Limits are the most CPU and memory the VMI may use.
	Limits ResourceList `json:"limits,omitempty"`
	// OvercommitGuestOverhead leaves the hypervisor's memory overhead out of
	// the memory request.
	OvercommitGuestOverhead bool `json:"overcommitGuestOverhead,omitempty"`
}

// CPU is the vCPU topology and model.
type CPU struct {
	// Cores is the number of cores per socket.
	Cores uint32 `json:"cores,omitempty"`
	// Sockets is the number of sockets.
	Sockets uint32 `json:"sockets,omitempty"`
	// MaxSockets is the most sockets CPU hot-plug may add up to.
	MaxSockets uint32 `json:"maxSockets,omitempty"`
	// Threads is the number of threads per core.
	Threads uint32 `json:"threads,omitempty"`
	// Model is the CPU model: a named model, host-model or host-passthrough.
	Model string `json:"model,omitempty"`
	// Features are CPU features to require, forbid or otherwise set on top of
	// the model.
	Features []CPUFeature `json:"features,omitempty"`
	// DedicatedCPUPlacement pins each vCPU to a host CPU of its own.
	DedicatedCPUPlacement bool `json:"dedicatedCpuPlacement,omitempty"`
	// IsolateEmulatorThread gives the emulator thread a host CPU of its own;
	// needs dedicated CPU placement.
	IsolateEmulatorThread bool `json:"isolateEmulatorThread,omitempty"`
	// NUMA maps the guest's NUMA topology onto the host's; needs
	// dedicated CPU placement and hugepages.
	NUMA *NUMA `json:"numa,omitempty"`
	// Realtime runs the vCPUs with a realtime scheduler; needs dedicated
	// CPU placement.
	Realtime *Realtime `json:"realtime,omitempty"`
}

// CPU models with a special meaning.
const (
	CPUModeHostPassthrough = "host-passthrough"
	CPUModeHostModel       = "host-model"
)

// CPUFeature enables or disables one CPU feature.
type CPUFeature struct {
	// Name is the feature's name, as the hypervisor knows it.
	Name string `json:"name"`
	// Policy is force, require, optional, disable or forbid; require by
	// default.
	Policy string `json:"policy,omitempty"`
}

// CPUTopology is sockets x cores x threads.
type CPUTopology struct {
	// Cores is the number of cores per socket.
	Cores uint32 `json:"cores,omitempty"`
	// Sockets is the number of sockets.
	Sockets uint32 `json:"sockets,omitempty"`
	// Threads is the number of threads per core.
	Threads uint32 `json:"threads,omitempty"`
}

// Memory is the guest's memory.
type Memory struct {
	// Hugepages backs the guest's memory with huge pages.
	Hugepages *Hugepages `json:"hugepages,omitempty"`
	// Guest is the memory the guest sees; it defaults to the memory request.
	Guest *resource.Quantity `json:"guest,omitempty"`
	// MaxGuest is the most memory hot-plug may raise the guest's memory to.
	MaxGuest *resource.Quantity `json:"maxGuest,omitempty"`
}

// Hugepages backs guest memory with huge pages of PageSize (2Mi, 1Gi).
type Hugepages struct {
	// PageSize is the huge page size, such as 2Mi or 1Gi.
	PageSize string `json:"pageSize,omitempty"`
}

// Machine is the emulated machine type (q35).
type Machine struct {
	// Type is the machine type, such as q35.
	Type string `json:"type"`
}

// Firmware is SMBIOS identity and boot firmware.
type Firmware struct {
	// UUID is the guest's system UUID.
	UUID types.UID `json:"uuid,omitempty"`
	// Bootloader selects BIOS or EFI.
	Bootloader *Bootloader `json:"bootloader,omitempty"`
	// Serial is the guest's system serial number.
	Serial string `json:"serial,omitempty"`
	// KernelBoot boots a kernel and initrd from a container image instead of a
	// disk.
	KernelBoot *KernelBoot `json:"kernelBoot,omitempty"`
}

// Bootloader is BIOS or EFI, never both.
type Bootloader struct {
	// BIOS boots the guest with a legacy BIOS.
	BIOS *BIOS `json:"bios,omitempty"`
	// EFI boots the guest with UEFI firmware.
	EFI *EFI `json:"efi,omitempty"`
}

// BIOS is SeaBIOS.
type BIOS struct {
	// UseSerial sends the BIOS output to the serial console.
	UseSerial *bool `json:"useSerial,omitempty"`
}

// EFI is OVMF, with secure boot by default.
type EFI struct {
	// SecureBoot enables Secure Boot; it needs SMM.
	SecureBoot *bool `json:"secureBoot,omitempty"`
	// Persistent keeps the EFI variables across restarts.
	Persistent *bool `json:"persistent,omitempty"`
}

// KernelBoot boots a kernel and initrd taken from a container image.
type KernelBoot struct {
	// KernelArgs is the kernel command line.
	KernelArgs string `json:"kernelArgs,omitempty"`
	// Container is the image the kernel and initrd are read from.
	Container *KernelBootContainer `json:"container,omitempty"`
}

// KernelBootContainer is the image holding the kernel and initrd.
type KernelBootContainer struct {
	// Image is the container image holding the kernel and initrd.
	Image string `json:"image"`
	// ImagePullSecret names the secret used to pull the image.
	ImagePullSecret string `json:"imagePullSecret,omitempty"`
	// KernelPath is the path of the kernel in the image.
	KernelPath string `json:"kernelPath,omitempty"`
	// InitrdPath is the path of the initrd in the image.
	InitrdPath string `json:"initrdPath,omitempty"`
	// ImagePullPolicy is when the image is pulled: Always, Never or
	// IfNotPresent.
	ImagePullPolicy PullPolicy `json:"imagePullPolicy,omitempty"`
}
