//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"context"
	"encoding/xml"
	"fmt"
	"strings"

	lv "libvirt.org/go/libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/hypervisor"
)

var _ hypervisor.ResourceHotplugger = (*Hypervisor)(nil)

// SetVCPUs plugs or unplugs vCPUs (virDomainSetVcpusFlags), live and, for
// a persistent domain, in its definition too.
func (h *Hypervisor) SetVCPUs(ctx context.Context, name string, count int) error {
	if count < 1 {
		return hypervisor.WrapDomain("setvcpus", name, fmt.Errorf("vcpu count %d: %w", count, hypervisor.ErrInvalidArgument))
	}
	return doDomain(ctx, h, "setvcpus", name, func(d *lv.Domain) error {
		flags := lv.DOMAIN_VCPU_LIVE
		persistent, err := d.IsPersistent()
		if err != nil {
			return err
		}
		if persistent {
			flags |= lv.DOMAIN_VCPU_CONFIG
		}
		return d.SetVcpusFlags(uint(count), flags)
	})
}

// PluggableMemory reads the live XML of the domain's virtio-mem device.
func (h *Hypervisor) PluggableMemory(ctx context.Context, name string) (hypervisor.PluggableMemory, error) {
	return withDomain(ctx, h, "pluggable memory", name, func(_ *lv.Connect, d *lv.Domain) (hypervisor.PluggableMemory, error) {
		text, err := d.GetXMLDesc(0)
		if err != nil {
			return hypervisor.PluggableMemory{}, err
		}
		return parsePluggableMemory(text)
	})
}

// RequestPluggableMemory sets the requested size of the domain's
// virtio-mem device (virDomainUpdateDeviceFlags on the running domain, as
// KubeVirt's virt-launcher does).
func (h *Hypervisor) RequestPluggableMemory(ctx context.Context, name string, bytes uint64) error {
	return doDomain(ctx, h, "update memory device", name, func(d *lv.Domain) error {
		text, err := d.GetXMLDesc(0)
		if err != nil {
			return err
		}
		def := &libvirtxml.Domain{}
		if err := def.Unmarshal(text); err != nil {
			return fmt.Errorf("domain XML: %v: %w", err, hypervisor.ErrInvalidArgument)
		}
		var dev *libvirtxml.DomainMemorydev
		if def.Devices != nil {
			for i := range def.Devices.Memorydevs {
				if m := &def.Devices.Memorydevs[i]; m.Model == "virtio-mem" && m.Target != nil {
					dev = m
					break
				}
			}
		}
		if dev == nil {
			return fmt.Errorf("the domain has no virtio-mem device: %w", hypervisor.ErrNotSupported)
		}
		if bytes%1024 != 0 {
			return fmt.Errorf("requested size %d is not a whole KiB: %w", bytes, hypervisor.ErrInvalidArgument)
		}
		dev.Target.Requested = &libvirtxml.DomainMemorydevTargetRequested{Value: uint(bytes >> 10), Unit: "KiB"}
		devXML, err := dev.Marshal()
		if err != nil {
			return err
		}
		return d.UpdateDeviceFlags(devXML, lv.DOMAIN_DEVICE_MODIFY_LIVE)
	})
}

// virtioMemXML is what PluggableMemory reads of a domain's XML: libvirtxml
// does not model the device's <current> size.
type virtioMemXML struct {
	Devices struct {
		Memory []struct {
			Model  string `xml:"model,attr"`
			Target *struct {
				Size      *sizeXML `xml:"size"`
				Block     *sizeXML `xml:"block"`
				Requested *sizeXML `xml:"requested"`
				Current   *sizeXML `xml:"current"`
			} `xml:"target"`
		} `xml:"memory"`
	} `xml:"devices"`
}

type sizeXML struct {
	Value uint64 `xml:",chardata"`
	Unit  string `xml:"unit,attr"`
}

func (s *sizeXML) bytes() (uint64, error) {
	if s == nil {
		return 0, nil
	}
	mult, ok := map[string]uint64{
		"": 1 << 10, "b": 1, "bytes": 1, "k": 1 << 10, "kib": 1 << 10, "kb": 1000,
		"m": 1 << 20, "mib": 1 << 20, "mb": 1000 * 1000, "g": 1 << 30, "gib": 1 << 30, "gb": 1000 * 1000 * 1000,
	}[strings.ToLower(s.Unit)]
	if !ok {
		return 0, fmt.Errorf("unknown unit %q: %w", s.Unit, hypervisor.ErrInvalidArgument)
	}
	return s.Value * mult, nil
}

// parsePluggableMemory reads the first virtio-mem device of domain XML.
func parsePluggableMemory(domainXML string) (hypervisor.PluggableMemory, error) {
	var pm hypervisor.PluggableMemory
	var doc virtioMemXML
	if err := xml.Unmarshal([]byte(domainXML), &doc); err != nil {
		return pm, fmt.Errorf("domain XML: %v: %w", err, hypervisor.ErrInvalidArgument)
	}
	for _, m := range doc.Devices.Memory {
		if m.Model != "virtio-mem" || m.Target == nil {
			continue
		}
		t := m.Target
		var err error
		for _, f := range []struct {
			dst *uint64
			src *sizeXML
		}{{&pm.SizeBytes, t.Size}, {&pm.BlockBytes, t.Block}, {&pm.RequestedBytes, t.Requested}, {&pm.CurrentBytes, t.Current}} {
			if *f.dst, err = f.src.bytes(); err != nil {
				return pm, err
			}
		}
		return pm, nil
	}
	return pm, fmt.Errorf("the domain has no virtio-mem device: %w", hypervisor.ErrNotSupported)
}
