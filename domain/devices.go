package domain

import (
	"fmt"
	"path/filepath"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
)

func (b *builder) devices(dom *libvirtxml.Domain) {
	dev := &b.vmi.Spec.Domain.Devices
	runDir := RuntimeDir(b.vmi, b.opts)
	list := dom.Devices

	// The guest agent channel is always there: the node agent and libvirt
	// both talk to qemu-ga through it.
	list.Channels = append(list.Channels, libvirtxml.DomainChannel{
		Source: &libvirtxml.DomainChardevSource{UNIX: &libvirtxml.DomainChardevSourceUNIX{
			Mode: "bind", Path: GuestAgentSocket(b.vmi, b.opts),
		}},
		Target: &libvirtxml.DomainChannelTarget{VirtIO: &libvirtxml.DomainChannelTargetVirtIO{Name: GuestAgentChannel}},
	})
	if dev.DownwardMetrics != nil {
		list.Channels = append(list.Channels, downwardMetricsChannel(b.vmi, b.opts))
	}

	if boolDefault(dev.AutoattachSerialConsole, true) {
		src := &libvirtxml.DomainChardevSource{UNIX: &libvirtxml.DomainChardevSourceUNIX{
			Mode: "bind", Path: SerialConsoleSocket(b.vmi, b.opts),
		}}
		serial := libvirtxml.DomainSerial{
			Source: src,
			Target: &libvirtxml.DomainSerialTarget{Port: uintp(0)},
		}
		if b.arch == "s390x" {
			serial.Target.Type = "sclp-serial"
		}
		if boolDefault(dev.LogSerialConsole, b.opts.LogSerialConsole) {
			serial.Log = &libvirtxml.DomainChardevLog{File: filepath.Join(runDir, "serial0.log"), Append: "on"}
		}
		list.Serials = append(list.Serials, serial)
		// The console is the serial port itself (libvirt makes a serial
		// console an alias of serial0); KubeVirt writes it as a pty.
		list.Consoles = append(list.Consoles, libvirtxml.DomainConsole{
			Source: &libvirtxml.DomainChardevSource{Pty: &libvirtxml.DomainChardevSourcePty{}},
			Target: &libvirtxml.DomainConsoleTarget{Type: "serial", Port: uintp(0)},
		})
	} else if dev.LogSerialConsole != nil && *dev.LogSerialConsole {
		b.fail("spec.domain.devices.logSerialConsole", "needs autoattachSerialConsole")
	}

	if boolDefault(dev.AutoattachGraphicsDevice, true) {
		list.Graphics = append(list.Graphics, libvirtxml.DomainGraphic{VNC: &libvirtxml.DomainGraphicVNC{
			Listeners: []libvirtxml.DomainGraphicListener{{Socket: &libvirtxml.DomainGraphicListenerSocket{
				Socket: VNCSocket(b.vmi, b.opts),
			}}},
		}})
		video := libvirtxml.DomainVideoModel{Type: "vga", Heads: 1, VRam: 16384}
		switch {
		case b.arch != "x86_64":
			video = libvirtxml.DomainVideoModel{Type: "virtio", Heads: 1}
		case b.efi:
			// OVMF has no VGA BIOS; bochs-display is its framebuffer.
			video = libvirtxml.DomainVideoModel{Type: "bochs", Heads: 1}
		}
		if dev.Video != nil { // the user's model, as KubeVirt's converter writes it
			video = libvirtxml.DomainVideoModel{Type: dev.Video.Type, Heads: 1}
			if dev.Video.Type == "vga" || dev.Video.Type == "cirrus" {
				video.VRam = 16384
			}
		}
		list.Videos = append(list.Videos, libvirtxml.DomainVideo{Model: video})
	}

	if dev.Video != nil && !boolDefault(dev.AutoattachGraphicsDevice, true) {
		b.fail("spec.domain.devices.video", "a video model needs the graphics device (autoattachGraphicsDevice is false)")
	}

	inputs := dev.Inputs
	if boolDefault(dev.AutoattachInputDevice, false) && len(inputs) == 0 {
		inputs = []virtkit.Input{{Name: "default-0", Type: virtkit.InputTypeTablet, Bus: virtkit.InputBusUSB}}
	}
	for i, in := range inputs {
		path := fmt.Sprintf("spec.domain.devices.inputs[%d]", i)
		if in.Type != virtkit.InputTypeTablet {
			b.fail(path+".type", "%q is not tablet", in.Type)
			continue
		}
		out := libvirtxml.DomainInput{Type: "tablet", Alias: &libvirtxml.DomainAlias{Name: userAliasPrefix + in.Name}}
		switch in.Bus {
		case "", virtkit.InputBusUSB:
			out.Bus = "usb"
			b.usbUsed = true
		case virtkit.InputBusVirtio:
			// libvirt takes (non-)transitional models only for passthrough
			// inputs; a virtio tablet is plain "virtio".
			out.Bus, out.Model = "virtio", "virtio"
		default:
			b.fail(path+".bus", "%q is not usb or virtio", in.Bus)
			continue
		}
		if in.Name == "" {
			b.fail(path+".name", "required")
		}
		list.Inputs = append(list.Inputs, out)
	}

	if boolDefault(dev.AutoattachMemBalloon, true) {
		mb := &libvirtxml.DomainMemBalloon{
			Model: b.virtioModel(),
			Stats: &libvirtxml.DomainMemBalloonStats{Period: 10},
		}
		// Free page reporting returns freed guest pages to the host; it
		// is pointless with pinned hugepages or dedicated CPUs (KubeVirt).
		cpu := b.vmi.Spec.Domain.CPU
		mem := b.vmi.Spec.Domain.Memory
		if (mem == nil || mem.Hugepages == nil) && (cpu == nil || !cpu.DedicatedCPUPlacement) {
			mb.FreePageReporting = "on"
		} else {
			mb.FreePageReporting = "off"
		}
		list.MemBalloon = mb
	} else {
		list.MemBalloon = &libvirtxml.DomainMemBalloon{Model: "none"}
	}

	if dev.Rng != nil {
		list.RNGs = append(list.RNGs, libvirtxml.DomainRNG{
			Model:   b.virtioModel(),
			Backend: &libvirtxml.DomainRNGBackend{Random: &libvirtxml.DomainRNGBackendRandom{Device: "/dev/urandom"}},
		})
	}

	if t := dev.TPM; t != nil && boolDefault(t.Enabled, true) {
		emu := &libvirtxml.DomainTPMBackendEmulator{Version: "2.0"}
		if boolDefault(t.Persistent, false) {
			emu.PersistentState = "yes"
		}
		model := "tpm-tis"
		if b.arch == "aarch64" {
			model = "tpm-tis-device"
		}
		list.TPMs = append(list.TPMs, libvirtxml.DomainTPM{
			Model:   model,
			Backend: &libvirtxml.DomainTPMBackend{Emulator: emu},
		})
	}
}

func (b *builder) controllers(dom *libvirtxml.Domain) {
	usb := libvirtxml.DomainController{Type: "usb", Index: uintp(0), Model: "none"}
	if b.usbUsed {
		usb.Model = "qemu-xhci"
	}
	// A virtio-scsi controller is always there, as KubeVirt adds one for
	// volumes hot-plugged later (on the scsi bus).
	ctrls := []libvirtxml.DomainController{usb,
		{Type: "scsi", Index: uintp(0), Model: b.virtioModel()}}
	// The guest agent channel (always present) sits on virtio-serial. As
	// KubeVirt, the controller is written only with the serial console;
	// without it libvirt adds the controller the channel needs.
	if boolDefault(b.vmi.Spec.Domain.Devices.AutoattachSerialConsole, true) {
		ctrls = append(ctrls, libvirtxml.DomainController{Type: "virtio-serial", Index: uintp(0), Model: b.virtioModel()})
	}
	dom.Devices.Controllers = ctrls
}
