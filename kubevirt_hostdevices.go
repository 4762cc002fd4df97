package virtkit

import (
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// PermittedHostDevices lists the host devices a cluster lets VMIs use, as
// KubeVirt's spec.configuration.permittedHostDevices: each entry selects
// devices on the nodes and names the resource they are advertised as in
// a node's status.capacity and status.allocatable; a VMI's
// gpus[].deviceName and hostDevices[].deviceName name such a resource.
type PermittedHostDevices struct {
	// PciHostDevices are PCI devices, selected by vendor and device ID.
	// +listType=atomic
	PciHostDevices []PciHostDevice `json:"pciHostDevices,omitempty"`
	// MediatedDevices are mediated devices (vGPUs), selected by their
	// type's name.
	// +listType=atomic
	MediatedDevices []MediatedHostDevice `json:"mediatedDevices,omitempty"`
	// USB are USB devices, selected by vendor and product ID; a node
	// agent advertises one device of the resource for each set of host
	// devices that has one device of every selector.
	// +listType=atomic
	USB []USBHostDevice `json:"usb,omitempty"`
}

// USBHostDevice permits the USB devices its selectors match, as one
// resource: a VMI given the resource gets one device of each selector.
type USBHostDevice struct {
	// ResourceName is the resource the devices are advertised as, e.g.
	// kubevirt.io/storage.
	ResourceName string `json:"resourceName"`
	// Selectors match the devices by vendor and product ID.
	// +listType=atomic
	Selectors []USBSelector `json:"selectors,omitempty"`
	// ExternalResourceProvider says another device plugin advertises the
	// devices.
	ExternalResourceProvider bool `json:"externalResourceProvider,omitempty"`
}

// USBSelector matches USB devices by their IDs in hex.
type USBSelector struct {
	// Vendor is the vendor ID, "46f4".
	Vendor string `json:"vendor"`
	// Product is the product ID, "0001".
	Product string `json:"product"`
}

// PciHostDevice permits the PCI devices of one vendor:device ID pair.
type PciHostDevice struct {
	// PCIVendorSelector is the devices' vendor and device ID in hex,
	// "10DE:1EB8".
	PCIVendorSelector string `json:"pciVendorSelector"`
	// ResourceName is the resource the devices are advertised as, e.g.
	// nvidia.com/TU104GL_Tesla_T4.
	ResourceName string `json:"resourceName"`
	// ExternalResourceProvider says another device plugin advertises the
	// devices; the node agent then advertises none of its own.
	ExternalResourceProvider bool `json:"externalResourceProvider,omitempty"`
}

// MediatedHostDevice permits the mediated devices of one type.
type MediatedHostDevice struct {
	// MDEVNameSelector is the mediated device type's name, e.g.
	// "GRID T4-1Q".
	MDEVNameSelector string `json:"mdevNameSelector"`
	// ResourceName is the resource the devices are advertised as.
	ResourceName string `json:"resourceName"`
	// ExternalResourceProvider says another device plugin advertises the
	// devices; the node agent then advertises none of its own.
	ExternalResourceProvider bool `json:"externalResourceProvider,omitempty"`
}

var pciVendorSelectorRE = regexp.MustCompile(`^[0-9a-fA-F]{4}:[0-9a-fA-F]{4}$`)

func validatePermittedHostDevices(p *PermittedHostDevices, fp *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, d := range p.PciHostDevices {
		ip := fp.Child("pciHostDevices").Index(i)
		if !pciVendorSelectorRE.MatchString(d.PCIVendorSelector) {
			errs = append(errs, field.Invalid(ip.Child("pciVendorSelector"), d.PCIVendorSelector, "must be a vendor and a device ID in hex, VVVV:DDDD"))
		}
		errs = append(errs, validateDeviceResourceName(d.ResourceName, ip.Child("resourceName"))...)
	}
	for i, d := range p.MediatedDevices {
		ip := fp.Child("mediatedDevices").Index(i)
		if d.MDEVNameSelector == "" {
			errs = append(errs, field.Required(ip.Child("mdevNameSelector"), "the mediated device type's name"))
		}
		errs = append(errs, validateDeviceResourceName(d.ResourceName, ip.Child("resourceName"))...)
	}
	usbID := regexp.MustCompile(`^[0-9a-fA-F]{4}$`)
	for i, d := range p.USB {
		ip := fp.Child("usb").Index(i)
		errs = append(errs, validateDeviceResourceName(d.ResourceName, ip.Child("resourceName"))...)
		for j, sel := range d.Selectors {
			sp := ip.Child("selectors").Index(j)
			if !usbID.MatchString(sel.Vendor) {
				errs = append(errs, field.Invalid(sp.Child("vendor"), sel.Vendor, "must be a USB vendor ID in hex, 4 digits"))
			}
			if !usbID.MatchString(sel.Product) {
				errs = append(errs, field.Invalid(sp.Child("product"), sel.Product, "must be a USB product ID in hex, 4 digits"))
			}
		}
	}
	return errs
}

// deviceResourceNameRE is a Kubernetes extended resource name:
// a DNS subdomain prefix, a slash, and a name.
var deviceResourceNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)

func validateDeviceResourceName(n string, p *field.Path) field.ErrorList {
	switch {
	case n == "":
		return field.ErrorList{field.Required(p, "the resource name the devices are advertised as")}
	case !deviceResourceNameRE.MatchString(n):
		return field.ErrorList{field.Invalid(p, n, "must be an extended resource name, vendor.example/name")}
	}
	return nil
}
