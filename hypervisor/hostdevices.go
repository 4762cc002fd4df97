package hypervisor

import "context"

// PCIDevice is a host PCI device that can be passed through to a guest.
type PCIDevice struct {
	// Address is the device's PCI address, domain:bus:slot.function in
	// hex: "0000:65:00.0".
	Address string
	// VendorID and DeviceID are the device's IDs in lower-case hex:
	// "10de" and "1eb8".
	VendorID, DeviceID string
}

// MediatedDevice is a mediated device (a vGPU) created on a host's
// physical device, which a guest can be given.
type MediatedDevice struct {
	// UUID is the mediated device's UUID.
	UUID string
	// TypeName is its type's name, "GRID T4-1Q"; TypeID the type's
	// identifier, "nvidia-222".
	TypeName, TypeID string
	// Parent is the PCI address of the physical device it lives on.
	Parent string
}

// USBDevice is a host USB device that can be passed through to a guest.
type USBDevice struct {
	// Bus and Device are the device's bus and device numbers on the host.
	Bus, Device uint
	// VendorID and ProductID are the device's IDs in lower-case hex:
	// "46f4" and "0001".
	VendorID, ProductID string
}

// HostDevices are the devices a host can give its guests.
type HostDevices struct {
	PCI      []PCIDevice
	Mediated []MediatedDevice
	USB      []USBDevice
}

// HostDeviceLister is implemented by a [Hypervisor] that reports the
// devices its host can pass through to guests.
type HostDeviceLister interface {
	HostDevices(ctx context.Context) (HostDevices, error)
}
