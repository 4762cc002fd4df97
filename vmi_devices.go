package virtkit

// Devices are the guest's devices.
type Devices struct {
	// Disks are the block devices of the guest (disks, CD-ROMs, LUNs), each
	// backed by the volume of the same name.
	Disks []Disk `json:"disks,omitempty"`
	// Interfaces are the guest's network interfaces, each attached to the
	// network of the same name.
	Interfaces []Interface `json:"interfaces,omitempty"`
	// Inputs are input devices, such as a USB tablet.
	Inputs []Input `json:"inputs,omitempty"`
	// AutoattachPodInterface adds the default pod network and its interface
	// when none is given; true by default.
	AutoattachPodInterface *bool `json:"autoattachPodInterface,omitempty"`
	// AutoattachGraphicsDevice adds a graphics device and VNC; true by
	// default.
	AutoattachGraphicsDevice *bool `json:"autoattachGraphicsDevice,omitempty"`
	// AutoattachSerialConsole adds a serial console; true by default.
	AutoattachSerialConsole *bool `json:"autoattachSerialConsole,omitempty"`
	// LogSerialConsole keeps a log of the serial console's output.
	LogSerialConsole *bool `json:"logSerialConsole,omitempty"`
	// AutoattachMemBalloon adds a memory balloon device; true by default.
	AutoattachMemBalloon *bool `json:"autoattachMemBalloon,omitempty"`
	// AutoattachInputDevice adds an input device when none is given.
	AutoattachInputDevice *bool `json:"autoattachInputDevice,omitempty"`
	// Rng adds a virtio random number generator fed from the host.
	Rng *Rng `json:"rng,omitempty"`
	// BlockMultiQueue gives virtio disks one queue per vCPU.
	BlockMultiQueue *bool `json:"blockMultiQueue,omitempty"`
	// NetworkInterfaceMultiQueue gives virtio interfaces one queue per vCPU.
	NetworkInterfaceMultiQueue *bool `json:"networkInterfaceMultiqueue,omitempty"`
	// UseVirtioTransitional uses virtio devices old guests without virtio 1.0
	// drivers can drive.
	UseVirtioTransitional *bool `json:"useVirtioTransitional,omitempty"`
	// TPM adds an emulated TPM 2.0 to the guest, where the host can provide
	// one.
	TPM *TPMDevice `json:"tpm,omitempty"`
	// Filesystems share volumes with the guest over virtiofs; see
	// Filesystem.
	// +listType=atomic
	Filesystems []Filesystem `json:"filesystems,omitempty"`
	// Watchdog is an emulated watchdog device; see Watchdog.
	Watchdog *Watchdog `json:"watchdog,omitempty"`
	// Video chooses the graphics device's model; see VideoDevice.
	Video *VideoDevice `json:"video,omitempty"`
	// DownwardMetrics adds the virtio-serial port org.github.vhostmd.1 on
	// which the guest asks for the downward metrics; see DownwardMetrics.
	DownwardMetrics *DownwardMetrics `json:"downwardMetrics,omitempty"`
	// DisableHotplug leaves out the spare slots that devices hot-plugged
	// later would use.
	DisableHotplug bool `json:"disableHotplug,omitempty"`
	// GPUs are GPUs passed through to the guest.
	// +listType=atomic
	GPUs []GPU `json:"gpus,omitempty"`
	// HostDevices are host devices passed through to the guest.
	// +listType=atomic
	HostDevices []HostDevice `json:"hostDevices,omitempty"`
	// PanicDevices are devices through which the guest reports a kernel
	// panic to the host.
	// +listType=atomic
	PanicDevices []PanicDevice `json:"panicDevices,omitempty"`
	// Sound is an emulated sound card.
	Sound *SoundDevice `json:"sound,omitempty"`
}

// Rng adds a virtio-rng device fed from /dev/urandom.
type Rng struct{}

// TPMDevice is an emulated TPM 2.0.
type TPMDevice struct {
	// Enabled adds an emulated TPM; true by default when tpm is given.
	Enabled *bool `json:"enabled,omitempty"`
	// Persistent keeps the TPM's state across restarts.
	Persistent *bool `json:"persistent,omitempty"`
}

// DiskBus is the bus a disk is attached to.
type DiskBus string

// Disk buses.
const (
	DiskBusVirtio DiskBus = "virtio"
	DiskBusSATA   DiskBus = "sata"
	DiskBusSCSI   DiskBus = "scsi"
	DiskBusUSB    DiskBus = "usb"
	DiskBusIDE    DiskBus = "ide" // rejected by validation, kept for its message
)

// DriverCache is the host page-cache mode of a disk.
type DriverCache string

// Cache modes.
const (
	CacheNone         DriverCache = "none"
	CacheWriteThrough DriverCache = "writethrough"
	CacheWriteBack    DriverCache = "writeback"
)

// DriverIO is the host I/O mode of a disk.
type DriverIO string

// I/O modes.
const (
	IOThreads DriverIO = "threads"
	IONative  DriverIO = "native"
)

// DiskErrorPolicy is what happens on an I/O error.
type DiskErrorPolicy string

// Disk error policies.
const (
	DiskErrorPolicyStop     DiskErrorPolicy = "stop"
	DiskErrorPolicyIgnore   DiskErrorPolicy = "ignore"
	DiskErrorPolicyReport   DiskErrorPolicy = "report"
	DiskErrorPolicyEnospace DiskErrorPolicy = "enospace"
)

// TrayState is the CD-ROM tray.
type TrayState string

// Tray states.
const (
	TrayStateOpen   TrayState = "open"
	TrayStateClosed TrayState = "closed"
)

// Disk attaches a volume to the guest as a disk, LUN or CD-ROM.
type Disk struct {
	// Name is the disk's name; the volume of the same name backs it.
	Name       string `json:"name"`
	DiskDevice `json:",inline"`
	// BootOrder is the disk's place in the boot order, from 1; disks without
	// one are not booted from.
	BootOrder *uint `json:"bootOrder,omitempty"`
	// Serial is the serial number the guest sees.
	Serial string `json:"serial,omitempty"`
	// DedicatedIOThread gives the disk an I/O thread of its own.
	DedicatedIOThread *bool `json:"dedicatedIOThread,omitempty"`
	// Cache is the host cache mode: none, writethrough or writeback.
	Cache DriverCache `json:"cache,omitempty"`
	// IO is the host I/O mode: threads or native.
	IO DriverIO `json:"io,omitempty"`
	// Tag is a device role tag passed to the guest in the metadata.
	Tag string `json:"tag,omitempty"`
	// Shareable lets several VMIs attach the disk at once.
	Shareable *bool `json:"shareable,omitempty"`
	// ErrorPolicy is what an I/O error does: stop, ignore, report or enospace.
	ErrorPolicy *DiskErrorPolicy `json:"errorPolicy,omitempty"`
	// BlockSize is the disk's logical and physical block sizes.
	BlockSize *BlockSize `json:"blockSize,omitempty"`
}

// DiskDevice is the disk's target type; at most one is set (none = disk).
type DiskDevice struct {
	// Disk attaches the volume as a disk.
	Disk *DiskTarget `json:"disk,omitempty"`
	// LUN attaches the volume as a SCSI LUN.
	LUN *LunTarget `json:"lun,omitempty"`
	// CDRom attaches the volume as a CD-ROM.
	CDRom *CDRomTarget `json:"cdrom,omitempty"`
}

// DiskTarget is a hard disk.
type DiskTarget struct {
	// Bus is the bus the disk is attached to: virtio, sata, scsi or usb. It
	// defaults to virtio, or to the preference's disk bus.
	Bus DiskBus `json:"bus,omitempty"`
	// ReadOnly makes the disk read-only.
	ReadOnly bool `json:"readonly,omitempty"`
	// PciAddress places the disk at this PCI address, as in 0000:81:01.1.
	PciAddress string `json:"pciAddress,omitempty"`
}

// LunTarget is a SCSI LUN passthrough.
type LunTarget struct {
	// Bus is the bus the LUN is attached to; scsi by default.
	Bus DiskBus `json:"bus,omitempty"`
	// ReadOnly makes the LUN read-only.
	ReadOnly bool `json:"readonly,omitempty"`
	// Reservation passes SCSI persistent reservations through to the device.
	Reservation bool `json:"reservation,omitempty"`
}

// CDRomTarget is a CD-ROM; read-only with a closed tray by default.
type CDRomTarget struct {
	// Bus is the bus the CD-ROM is attached to: sata or scsi; sata by default.
	Bus DiskBus `json:"bus,omitempty"`
	// ReadOnly makes the CD-ROM read-only; true by default.
	ReadOnly *bool `json:"readonly,omitempty"`
	// Tray is the tray's state: open or closed; closed by default.
	Tray TrayState `json:"tray,omitempty"`
}

// Input is a tablet on the usb or virtio bus.
type Input struct {
	// Bus is the bus of the input device: usb or virtio.
	Bus InputBus `json:"bus,omitempty"`
	// Type is the kind of input device: tablet or keyboard.
	Type InputType `json:"type"`
	// Name is the device's name.
	Name string `json:"name"`
}

// InputBus is usb or virtio.
type InputBus string

// InputType is tablet (the only one).
type InputType string

// Input buses and types.
const (
	InputBusUSB     InputBus  = "usb"
	InputBusVirtio  InputBus  = "virtio"
	InputTypeTablet InputType = "tablet"
)
