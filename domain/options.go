package domain

import (
	"context"
	"errors"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
)

// ErrUnsupported marks a VMI field the builder cannot express in domain XML.
// Errors wrapping it name the field path:
//
//	spec.domain.devices.gpus: not supported by the domain builder
var ErrUnsupported = errors.New("not supported by the domain builder")

// ErrNotResolved marks a volume, network or kernel a resolver has no host
// source for (an unknown multus network, a missing SR-IOV device, ...).
var ErrNotResolved = errors.New("not resolved to a host source")

// Domain types (Options.Type).
const (
	// TypeQEMU is software emulation (TCG): slower, runs on any host,
	// including nested ones where /dev/kvm is unusable. It is the default
	// because a definition that cannot start is worse than a slow one.
	TypeQEMU = "qemu"
	// TypeKVM is hardware virtualisation through /dev/kvm.
	TypeKVM = "kvm"
)

// Mutator changes a built domain, in the spirit of KubeVirt's hook
// sidecars. Mutators see the VMI read-only and run in Options order after
// the builder is done; an error aborts the build.
type Mutator func(vmi *virtkit.VirtualMachineInstance, dom *libvirtxml.Domain) error

// Options tune the builder. The zero value is a usable default: software
// emulation, Debian's OVMF paths, /var/lib/virtkit for volumes, /run/virtkit
// for sockets, and path-only resolvers that create no files.
type Options struct {
	// Type is the libvirt domain type, TypeQEMU (default) or TypeKVM.
	Type string
	// Arch is the guest architecture in libvirt's spelling (x86_64,
	// aarch64, s390x). Default: from spec.architecture (amd64 -> x86_64),
	// else x86_64.
	Arch string
	// Emulator, when set, is written as <emulator>; libvirt picks one
	// otherwise.
	Emulator string
	// MachineType is used when spec.domain.machine.type is empty (q35).
	MachineType string

	// EFI firmware paths (default: Debian 12's ovmf package).
	EFI EFIPaths

	// RuntimeDir holds per-VMI sockets (guest agent, serial console, VNC)
	// in RuntimeDir/<uid or namespace_name>/. Default /run/virtkit. Unix
	// socket paths are limited to 107 bytes: keep it short. QEMU creates
	// the sockets when the domain starts, so the directory must exist and
	// be writable by QEMU's user then (see MakeRuntimeDir).
	RuntimeDir string
	// LogSerialConsole writes the serial console to a log file next to its
	// socket when spec.domain.devices.logSerialConsole is unset.
	LogSerialConsole bool

	// DedicatedCPUs are the host CPUs vCPUs are pinned to, in vCPU order,
	// for cpu.dedicatedCpuPlacement (one more for isolateEmulatorThread).
	// Without them a VMI that asks for dedicated placement is an error.
	DedicatedCPUs []uint

	// SMBIOS values of the system entry (defaults KubeVirt, KubeVirt, None).
	SMBIOS SMBIOS

	// VolumeResolver maps volumes to host sources. Default: a DirResolver
	// over /var/lib/virtkit that computes paths and creates nothing.
	VolumeResolver VolumeResolver
	// KernelResolver maps firmware.kernelBoot.container to host files.
	// Default: VolumeResolver when it implements KernelResolver, else the
	// default DirResolver.
	KernelResolver KernelResolver
	// NetworkResolver maps interfaces to host attachments. Default: a
	// NetResolver that puts the pod network on user-mode networking.
	NetworkResolver NetworkResolver

	// ConfigResolver reads configMap, secret and serviceAccount volumes
	// (a node agent reads them from its store). Without one such volumes
	// are an error wrapping ErrNotResolved; downwardAPI volumes need none.
	ConfigResolver ConfigResolver

	// HostPaths is the node's host-path policy: the hostDisk paths a
	// manifest may name. The zero value allows none. Build checks every
	// hostDisk path against it, symlinks resolved, before any resolver
	// sees (or creates) the path, and hands the resolver the resolved path.
	HostPaths HostPathPolicy
	// ContainerPaths is the node's policy for containerPath volumes: the
	// host directories such a volume's path may name. In KubeVirt the
	// path is inside the launcher pod's container; a virtkit node has no
	// container, so the path is read on the host, and only below a prefix
	// listed here. The zero value allows none: such a VMI fails with a
	// condition naming spec.volumes[i].containerPath.
	ContainerPaths HostPathPolicy

	// BindingPlugins are the network binding plugins of the KubeVirt
	// configuration (spec.configuration.network.binding), by name. An
	// interface naming a plugin runs when the plugin needs no sidecar and
	// attaches by managedTap; a node agent fills this in from the KubeVirt
	// object before it builds a domain with such an interface.
	BindingPlugins map[string]virtkit.InterfaceBindingPlugin

	// NodeName, when set, is written into the domain's kubevirt metadata
	// (<node>): the node agent that defined the domain. Node agents that
	// share one hypervisor tell their domains apart by it, and an agent
	// touches no domain that names another node.
	NodeName string

	// HostDevices are the host devices the node assigned to the VMI's
	// gpus and hostDevices, by the device's name in the VMI. A GPU or host
	// device without an assignment is an error wrapping ErrUnsupported.
	HostDevices map[string]AssignedDevice

	// LaunchSecurity is what the node's platform offers confidential
	// guests (spec.domain.launchSecurity); the zero value offers nothing.
	LaunchSecurity LaunchSecurity

	// Mutators run in order after the build.
	Mutators []Mutator
}

// EFIPaths locate OVMF. Empty fields take Debian 12's defaults.
type EFIPaths struct {
	Code       string // /usr/share/OVMF/OVMF_CODE_4M.fd
	Vars       string // /usr/share/OVMF/OVMF_VARS_4M.fd
	SecureCode string // /usr/share/OVMF/OVMF_CODE_4M.secboot.fd
	SecureVars string // /usr/share/OVMF/OVMF_VARS_4M.ms.fd (Microsoft keys enrolled)
	// NVRAMDir holds each VMI's variable store <namespace>_<name>_VARS.fd.
	NVRAMDir string // /var/lib/libvirt/qemu/nvram
}

// SMBIOS holds the SMBIOS system entries every guest sees.
type SMBIOS struct {
	Manufacturer string // KubeVirt
	Family       string // KubeVirt
	Product      string // None
	Version      string
	SKU          string
}

// Defaults used when Options fields are empty.
const (
	DefaultRuntimeDir  = "/run/virtkit"
	DefaultWorkDir     = "/var/lib/virtkit"
	DefaultMachineType = "q35"
	DefaultNVRAMDir    = "/var/lib/libvirt/qemu/nvram"
)

func (o Options) withDefaults() Options {
	if o.Type == "" {
		o.Type = TypeQEMU
	}
	if o.MachineType == "" {
		o.MachineType = DefaultMachineType
	}
	if o.RuntimeDir == "" {
		o.RuntimeDir = DefaultRuntimeDir
	}
	e := &o.EFI
	def := func(p *string, v string) {
		if *p == "" {
			*p = v
		}
	}
	def(&e.Code, "/usr/share/OVMF/OVMF_CODE_4M.fd")
	def(&e.Vars, "/usr/share/OVMF/OVMF_VARS_4M.fd")
	def(&e.SecureCode, "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd")
	def(&e.SecureVars, "/usr/share/OVMF/OVMF_VARS_4M.ms.fd")
	def(&e.NVRAMDir, DefaultNVRAMDir)
	def(&o.SMBIOS.Manufacturer, "KubeVirt")
	def(&o.SMBIOS.Family, "KubeVirt")
	def(&o.SMBIOS.Product, "None")
	if o.VolumeResolver == nil {
		o.VolumeResolver = &DirResolver{}
	}
	if o.KernelResolver == nil {
		if kr, ok := o.VolumeResolver.(KernelResolver); ok {
			o.KernelResolver = kr
		} else {
			o.KernelResolver = &DirResolver{}
		}
	}
	if o.NetworkResolver == nil {
		o.NetworkResolver = &NetResolver{}
	}
	return o
}

// VolumeResolver maps one VMI volume to a host source (a file or block
// device). Resolvers may create files (an emptyDisk image, a cloud-init
// ISO); Build itself does no I/O.
type VolumeResolver interface {
	ResolveVolume(ctx context.Context, req VolumeRequest) (HostVolume, error)
}

// KernelResolver maps firmware.kernelBoot.container to host files.
type KernelResolver interface {
	ResolveKernel(ctx context.Context, req KernelRequest) (HostKernel, error)
}

// NetworkResolver maps one VMI interface and its network to a host
// attachment.
type NetworkResolver interface {
	ResolveNetwork(ctx context.Context, req NetworkRequest) (HostNetwork, error)
}

// VolumeResolverFunc adapts a function to VolumeResolver.
type VolumeResolverFunc func(ctx context.Context, req VolumeRequest) (HostVolume, error)

// ResolveVolume calls f.
func (f VolumeResolverFunc) ResolveVolume(ctx context.Context, req VolumeRequest) (HostVolume, error) {
	return f(ctx, req)
}

// KernelResolverFunc adapts a function to KernelResolver.
type KernelResolverFunc func(ctx context.Context, req KernelRequest) (HostKernel, error)

// ResolveKernel calls f.
func (f KernelResolverFunc) ResolveKernel(ctx context.Context, req KernelRequest) (HostKernel, error) {
	return f(ctx, req)
}

// NetworkResolverFunc adapts a function to NetworkResolver.
type NetworkResolverFunc func(ctx context.Context, req NetworkRequest) (HostNetwork, error)

// ResolveNetwork calls f.
func (f NetworkResolverFunc) ResolveNetwork(ctx context.Context, req NetworkRequest) (HostNetwork, error) {
	return f(ctx, req)
}

var (
	_ VolumeResolver  = VolumeResolverFunc(nil)
	_ KernelResolver  = KernelResolverFunc(nil)
	_ NetworkResolver = NetworkResolverFunc(nil)
)

// VolumeKind names the volume source of a request (KubeVirt's JSON names).
type VolumeKind string

// Volume kinds the builder resolves.
const (
	VolumeContainerDisk         VolumeKind = "containerDisk"
	VolumePersistentVolumeClaim VolumeKind = "persistentVolumeClaim"
	VolumeDataVolume            VolumeKind = "dataVolume"
	VolumeEphemeral             VolumeKind = "ephemeral"
	VolumeEmptyDisk             VolumeKind = "emptyDisk"
	VolumeHostDisk              VolumeKind = "hostDisk"
	VolumeCloudInitNoCloud      VolumeKind = "cloudInitNoCloud"
	VolumeCloudInitConfigDrive  VolumeKind = "cloudInitConfigDrive"
)

// VolumeRequest describes one volume to resolve.
type VolumeRequest struct {
	// Namespace, VMIName and UID identify the VMI.
	Namespace, VMIName, UID string
	// Volume is the volume's name; Index its position in spec.volumes.
	Volume string
	Index  int
	// Field is the volume source's field path, for error messages
	// (spec.volumes[1].emptyDisk).
	Field string
	Kind  VolumeKind

	// Image and ImagePath: containerDisk.
	Image, ImagePath string
	// ImagePullPolicy and ImagePullSecret: containerDisk, as written.
	ImagePullPolicy, ImagePullSecret string
	// ClaimName: persistentVolumeClaim, ephemeral (its PVC) and
	// dataVolume (the DataVolume's name).
	ClaimName string
	// ReadOnly: the source is read-only (PVC readOnly).
	ReadOnly bool
	// Node, when set and not the resolving node, is the node that will
	// open the volume (a migration target receiving a copied disk): a
	// resolver that knows where that node keeps the claim answers with
	// that path without opening it, and refuses a claim that node cannot
	// see. A resolver whose claims every node sees at the same path
	// (DirResolver) ignores it.
	Node string
	// Path, HostDiskType (Disk|DiskOrCreate) and Shared: hostDisk.
	Path, HostDiskType string
	Shared             bool
	// Capacity in bytes: emptyDisk, hostDisk DiskOrCreate.
	Capacity int64
	// CloudInit is the prepared ISO image of cloud-init and config
	// volumes (write it with WriteTo; a Secret's data is in it: never log
	// it).
	CloudInit *CloudInitImage
}

// Source types of a HostVolume.
const (
	SourceFile  = "file"
	SourceBlock = "block"
)

// DirectIO says whether a host source accepts O_DIRECT (cache="none").
type DirectIO int

// DirectIO values.
const (
	DirectIOUnknown DirectIO = iota // not probed: an explicit cache none is kept
	DirectIOYes
	DirectIONo // an explicit cache none is an error
)

// HostVolume is where a volume lives on the host.
type HostVolume struct {
	// Type is SourceFile or SourceBlock.
	Type string
	// Path is the file or device.
	Path string
	// Format is the image format: raw or qcow2.
	Format string
	// BackingPath and BackingFormat describe the read-only base image of
	// a copy-on-write overlay (containerDisk, ephemeral).
	BackingPath, BackingFormat string
	// ReadOnly forces the disk read-only.
	ReadOnly bool
	// DirectIO drives the default cache mode: none when DirectIOYes,
	// writethrough otherwise (KubeVirt's rule).
	DirectIO DirectIO
}

// KernelRequest asks for the kernel and initrd of a kernel-boot container.
type KernelRequest struct {
	Namespace, VMIName, UID string
	// Field is spec.domain.firmware.kernelBoot.container.
	Field                         string
	Image, KernelPath, InitrdPath string
	// ImagePullPolicy and ImagePullSecret, as written.
	ImagePullPolicy, ImagePullSecret string
}

// HostKernel is a kernel (and optional initrd) on the host.
type HostKernel struct {
	Kernel, Initrd string
}

// NetworkKind is the kind of a VMI network.
type NetworkKind string

// Network kinds.
const (
	NetworkPod    NetworkKind = "pod"
	NetworkMultus NetworkKind = "multus"
)

// NetworkRequest describes one interface and the network it attaches to.
type NetworkRequest struct {
	Namespace, VMIName, UID string
	// Interface is the interface name; Index its position in
	// spec.domain.devices.interfaces.
	Interface string
	Index     int
	// Field is the interface's field path (spec.domain.devices.interfaces[0]).
	Field string
	// Binding is masquerade, bridge, sriov or passtBinding.
	Binding string
	// Network is the network name; Kind pod or multus; MultusNetworkName
	// the multus networkName (namespace/name or name).
	Network           string
	Kind              NetworkKind
	MultusNetworkName string
	// MAC is the address the guest NIC gets (from the spec, else the
	// stable one the builder derives), so a resolver can tie a DHCP lease
	// to it.
	MAC string
	// Ports are the interface's declared ports (masquerade forwards only
	// those when any are given).
	Ports []virtkit.Port
}

// Host network attachment types (HostNetwork.Type).
const (
	AttachUser     = "user"     // libvirt user-mode networking (NAT)
	AttachNetwork  = "network"  // a libvirt network named by Source
	AttachBridge   = "bridge"   // a host bridge named by Source
	AttachEthernet = "ethernet" // a pre-created tap device named by Source
	AttachHostdev  = "hostdev"  // a PCI device (SR-IOV VF) at PCIAddress
)

// HostNetwork is how an interface reaches the host.
type HostNetwork struct {
	Type   string
	Source string
	// PCIAddress of the VF for AttachHostdev: domain:bus:slot.function,
	// for example 0000:3b:02.1.
	PCIAddress string
	// MTU, when non-zero, is set on the guest NIC.
	MTU uint
}
