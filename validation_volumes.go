package virtkit

import (
	"encoding/base64"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Rules 1-15, 32, 33.
func (v *vmiValidator) volumesAndDisks() {
	spec, sp := v.spec, v.sp
	volPath := sp.Child("volumes")
	diskPath := sp.Child("domain", "devices", "disks")
	if len(spec.Volumes) > maxVolumes {
		v.add(field.TooMany(volPath, len(spec.Volumes), maxVolumes))
	}
	for i := range spec.Volumes {
		vol := &spec.Volumes[i]
		p := volPath.Index(i)
		if vol.Name == "" {
			v.add(field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsDNS1123Label(vol.Name) {
				v.add(field.Invalid(p.Child("name"), vol.Name, msg))
			}
			if _, dup := v.volumes[vol.Name]; dup { // rule 4
				v.add(field.Duplicate(p.Child("name"), vol.Name))
			} else {
				v.volumes[vol.Name] = vol
			}
		}
		v.volumeSource(vol, p)
	}
	v.serviceAccountVolumes(volPath)
	v.downwardMetricsVolumes(volPath)
	disks := map[string]bool{}
	for i := range spec.Domain.Devices.Disks {
		d := &spec.Domain.Devices.Disks[i]
		p := diskPath.Index(i)
		if d.Name == "" {
			v.add(field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsDNS1123Label(d.Name) { // rule 3
				v.add(field.Invalid(p.Child("name"), d.Name, msg))
			}
			if disks[d.Name] {
				v.add(field.Duplicate(p.Child("name"), d.Name))
			}
			disks[d.Name] = true
			// Rule 2; a CD-ROM may have no volume: an empty drive that a
			// volume is inserted into later (KubeVirt's declarative hotplug).
			if _, ok := v.volumes[d.Name]; !ok && (d.CDRom == nil || d.Disk != nil || d.LUN != nil) {
				v.add(field.NotFound(p.Child("name"), d.Name))
			}
		}
		v.disk(d, p)
	}
	shared := v.filesystems(disks)
	v.containerPathVolumes(disks, shared)
	v.watchdog()
	v.video()
	for i, vol := range spec.Volumes { // rule 1, on VMIs only
		if v.isVMI && vol.Name != "" && !disks[vol.Name] && !shared[vol.Name] {
			v.add(field.NotFound(volPath.Index(i).Child("name"), vol.Name))
		}
	}
}

func (v *vmiValidator) volumeSource(vol *Volume, p *field.Path) {
	s := vol.VolumeSource
	n := countSet(s.HostDisk != nil, s.PersistentVolumeClaim != nil, s.CloudInitNoCloud != nil, s.CloudInitConfigDrive != nil,
		s.ContainerDisk != nil, s.Ephemeral != nil, s.EmptyDisk != nil, s.DataVolume != nil,
		s.ConfigMap != nil, s.Secret != nil, s.ServiceAccount != nil, s.DownwardAPI != nil, s.Sysprep != nil, s.DownwardMetrics != nil, s.ContainerPath != nil)
	if n != 1 { // rule 5
		v.add(field.Invalid(p, n, "must have exactly one source type set"))
	}
	v.configVolume(&s, p)
	v.add(validateVolumeReferences(&s, p)...)
	if s.ContainerDisk != nil && s.ContainerDisk.Image == "" {
		v.add(field.Required(p.Child("containerDisk", "image"), ""))
	}
	if s.ContainerDisk != nil {
		v.pullPolicy(s.ContainerDisk.ImagePullPolicy, p.Child("containerDisk", "imagePullPolicy"))
		if cp := s.ContainerDisk.Path; cp != "" {
			if e := absolutePath(cp, p.Child("containerDisk")); e != nil {
				v.add(e)
			}
		}
	}
	if s.PersistentVolumeClaim != nil && s.PersistentVolumeClaim.ClaimName == "" {
		v.add(field.Required(p.Child("persistentVolumeClaim", "claimName"), ""))
	}
	if s.Ephemeral != nil {
		if s.Ephemeral.PersistentVolumeClaim == nil {
			v.add(field.Required(p.Child("ephemeral", "persistentVolumeClaim"), ""))
		} else if s.Ephemeral.PersistentVolumeClaim.ClaimName == "" {
			v.add(field.Required(p.Child("ephemeral", "persistentVolumeClaim", "claimName"), ""))
		}
	}
	if s.DataVolume != nil && s.DataVolume.Name == "" {
		v.add(field.Required(p.Child("dataVolume", "name"), ""))
	}
	if s.EmptyDisk != nil && s.EmptyDisk.Capacity.Sign() <= 0 {
		v.add(field.Required(p.Child("emptyDisk", "capacity"), "must be greater than 0"))
	}
	if h := s.HostDisk; h != nil { // rule 33
		hp := p.Child("hostDisk")
		if h.Path == "" {
			v.add(field.Required(hp.Child("path"), ""))
		}
		switch h.Type {
		case HostDiskExists:
			if !h.Capacity.IsZero() {
				v.add(field.Invalid(hp.Child("capacity"), h.Capacity.String(), "capacity is only allowed with type DiskOrCreate"))
			}
		case HostDiskExistsOrCreate:
			if h.Capacity.Sign() < 0 {
				v.add(field.Invalid(hp.Child("capacity"), h.Capacity.String(), "must not be negative"))
			}
		default:
			v.add(field.NotSupported(hp.Child("type"), h.Type, []HostDiskType{HostDiskExists, HostDiskExistsOrCreate}))
		}
	}
	if c := s.CloudInitNoCloud; c != nil { // rule 32
		v.cloudInit(p.Child("cloudInitNoCloud"), c.UserDataSecretRef, c.UserDataBase64, c.UserData, c.NetworkDataSecretRef, c.NetworkDataBase64, c.NetworkData)
	}
	if c := s.CloudInitConfigDrive; c != nil {
		v.cloudInit(p.Child("cloudInitConfigDrive"), c.UserDataSecretRef, c.UserDataBase64, c.UserData, c.NetworkDataSecretRef, c.NetworkDataBase64, c.NetworkData)
	}
}

func (v *vmiValidator) cloudInit(p *field.Path, userRef *LocalObjectReference, userB64, user string, netRef *LocalObjectReference, netB64, network string) {
	users := countSet(userRef != nil, userB64 != "", user != "")
	nets := countSet(netRef != nil, netB64 != "", network != "")
	if users == 0 && nets == 0 {
		v.add(field.Required(p, "at least one of userData, userDataBase64, secretRef, networkData, networkDataBase64, networkDataSecretRef is required"))
	}
	// KubeVirt reports too many sources and too much data at the
	// cloud-init source itself.
	if users > 1 {
		v.add(field.Invalid(p, users, "must have only one user data source set"))
	}
	if nets > 1 {
		v.add(field.Invalid(p, nets, "must have only one network data source set"))
	}
	check := func(name, plain, b64 string) {
		data := plain
		if b64 != "" {
			raw, err := base64.StdEncoding.DecodeString(b64)
			if err != nil {
				v.add(field.Invalid(p.Child(name+"Base64"), "", "is not valid base64: "+err.Error()))
				return
			}
			data = string(raw)
		}
		if len(data) > maxCloudInitDataBytes {
			v.add(field.TooLong(p, "", maxCloudInitDataBytes))
		}
	}
	check("userData", user, userB64)
	check("networkData", network, netB64)
	if userRef != nil && userRef.Name == "" {
		v.add(field.Required(p.Child("secretRef", "name"), ""))
	}
	if netRef != nil && netRef.Name == "" {
		v.add(field.Required(p.Child("networkDataSecretRef", "name"), ""))
	}
}

func (v *vmiValidator) pullPolicy(pp PullPolicy, p *field.Path) {
	valid := []PullPolicy{PullAlways, PullNever, PullIfNotPresent}
	if pp != "" && !slices.Contains(valid, pp) {
		v.add(field.NotSupported(p, pp, valid))
	}
}

var validDiskBuses = []DiskBus{DiskBusVirtio, DiskBusSCSI, DiskBusSATA, DiskBusUSB}

func (v *vmiValidator) diskBus(bus DiskBus, p *field.Path) {
	switch {
	case bus == "":
	case bus == DiskBusIDE:
		e := field.NotSupported(p, bus, validDiskBuses)
		e.Detail = "IDE bus is not supported; " + e.Detail
		v.add(e)
	case !slices.Contains(validDiskBuses, bus):
		v.add(field.NotSupported(p, bus, validDiskBuses))
	}
}

func (v *vmiValidator) disk(d *Disk, p *field.Path) {
	if n := countSet(d.Disk != nil, d.LUN != nil, d.CDRom != nil); n > 1 { // rule 6
		v.add(field.Invalid(p, n, "can only have a single target type defined"))
	}
	var bus DiskBus
	switch {
	case d.Disk != nil:
		bus = d.Disk.Bus
		v.diskBus(bus, p.Child("disk", "bus"))
		if d.Disk.ReadOnly && bus == DiskBusSATA { // rule 9
			v.add(field.Invalid(p.Child("disk", "bus"), bus, "sata hard-disks do not support read-only."))
		}
		if d.Disk.PciAddress != "" { // rule 10
			if bus != DiskBusVirtio {
				v.add(field.Invalid(p.Child("disk", "pciAddress"), d.Disk.PciAddress, "setting a PCI address is only possible with bus type virtio."))
			} else if !pciAddressRE.MatchString(d.Disk.PciAddress) {
				v.add(field.Invalid(p.Child("disk", "pciAddress"), d.Disk.PciAddress, "must be a PCI address like 0000:01:00.0"))
			}
		}
	case d.LUN != nil:
		bus = d.LUN.Bus
		v.diskBus(bus, p.Child("lun", "bus"))
		if vol, ok := v.volumes[d.Name]; ok && vol.PersistentVolumeClaim == nil && vol.DataVolume == nil { // rule 15
			v.add(field.Invalid(p.Child("lun"), d.Name, "lun can only be mapped to a DataVolume or PersistentVolumeClaim volume."))
		}
	case d.CDRom != nil:
		bus = d.CDRom.Bus
		v.diskBus(bus, p.Child("cdrom", "bus"))
		if bus == DiskBusVirtio { // rule 8
			v.add(field.Invalid(p.Child("cdrom", "bus"), bus, "Bus type virtio is invalid for CD-ROM device"))
		}
		if t := d.CDRom.Tray; t != "" && t != TrayStateOpen && t != TrayStateClosed {
			v.add(field.NotSupported(p.Child("cdrom", "tray"), t, []TrayState{TrayStateOpen, TrayStateClosed}))
		}
	}
	if d.DedicatedIOThread != nil && *d.DedicatedIOThread && bus != "" && bus != DiskBusVirtio { // rule 11
		v.add(field.Invalid(p, true, fmt.Sprintf("dedicatedIOThread: IOThreads are not supported for disks on a %s bus", bus)))
	}
	if c := d.Cache; c != "" && !slices.Contains([]DriverCache{CacheNone, CacheWriteThrough, CacheWriteBack}, c) { // rule 12
		v.add(field.NotSupported(p.Child("cache"), c, []DriverCache{CacheNone, CacheWriteThrough, CacheWriteBack}))
	}
	if io := d.IO; io != "" && io != IONative && io != IOThreads {
		v.add(field.NotSupported(p.Child("io"), io, []DriverIO{IONative, IOThreads}))
	}
	if ep := d.ErrorPolicy; ep != nil {
		valid := []DiskErrorPolicy{DiskErrorPolicyStop, DiskErrorPolicyIgnore, DiskErrorPolicyReport, DiskErrorPolicyEnospace}
		if !slices.Contains(valid, *ep) {
			v.add(field.NotSupported(p.Child("errorPolicy"), *ep, valid))
		}
	}
	if s := d.Serial; s != "" { // rule 13
		if len(s) > maxDiskSerialLength {
			v.add(field.TooLong(p.Child("serial"), s, maxDiskSerialLength))
		} else if !diskSerialRE.MatchString(s) {
			v.add(field.Invalid(p.Child("serial"), s, "must be made up of the following characters [A-Za-z0-9_.+-]"))
		}
	}
	v.bootOrder(d.BootOrder, p.Child("bootOrder"))
}

// Rule 14: boot orders are positive and unique across disks and interfaces.
func (v *vmiValidator) bootOrder(order *uint, p *field.Path) {
	if order == nil {
		return
	}
	if *order < 1 {
		v.add(field.Invalid(p, *order, "must have a boot order > 0, if supplied"))
		return
	}
	if first, dup := v.bootOrders[*order]; dup {
		e := field.Duplicate(p, *order)
		e.Detail = "Boot order already set for " + first
		v.add(e)
		return
	}
	v.bootOrders[*order] = p.String()
}
