package domain

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
)

func (b *builder) disks(dom *libvirtxml.Domain) {
	spec := &b.vmi.Spec
	volumes := map[string]int{}
	for i, v := range spec.Volumes {
		volumes[v.Name] = i
	}
	// Targets recorded in the status stay with their volumes (stable
	// across hotplug and restarts); new disks get the next free name.
	known := map[string]string{}
	var reserved []string
	for _, vs := range b.vmi.Status.VolumeStatus {
		if vs.Target != "" {
			known[vs.Name] = vs.Target
			reserved = append(reserved, vs.Target)
		}
	}
	alloc := newTargetAllocator(reserved...)
	threads := b.ioThreadPlan()
	for i, d := range spec.Domain.Devices.Disks {
		path := fmt.Sprintf("spec.domain.devices.disks[%d]", i)
		vi, ok := volumes[d.Name]
		if !ok {
			if d.CDRom == nil || d.Disk != nil || d.LUN != nil {
				b.fail(path+".name", "no volume named %q", d.Name)
				continue
			}
			vi = -1 // an empty CD-ROM drive, for a medium inserted later
		}
		disk := b.disk(path, d, vi, known[d.Name], alloc)
		if disk == nil {
			continue
		}
		if boolDefault(d.DedicatedIOThread, false) && disk.Target.Bus != "virtio" {
			b.unsupported(path+".dedicatedIOThread", "only virtio disks have I/O threads")
		}
		threads.assign(d, disk)
		b.blockSize(path, d, disk)
		dom.Devices.Disks = append(dom.Devices.Disks, *disk)
	}
	dom.IOThreads = threads.count
}

func (b *builder) disk(path string, d virtkit.Disk, vi int, knownTarget string, alloc *targetAllocator) *libvirtxml.DomainDisk {
	out := &libvirtxml.DomainDisk{
		Driver: &libvirtxml.DomainDiskDriver{Name: "qemu"},
		Alias:  &libvirtxml.DomainAlias{Name: userAliasPrefix + d.Name},
		Serial: d.Serial,
	}
	defaultBus := virtkit.DiskBusSATA
	if b.arch != "x86_64" {
		defaultBus = virtkit.DiskBusVirtio
	}
	var bus virtkit.DiskBus
	var readOnly bool
	devPath := path
	switch {
	case d.LUN != nil && d.CDRom == nil && d.Disk == nil:
		devPath += ".lun"
		out.Device = "lun"
		bus, readOnly = d.LUN.Bus, d.LUN.ReadOnly
		if bus == "" {
			bus = virtkit.DiskBusSCSI
		}
		if bus != virtkit.DiskBusSCSI && bus != virtkit.DiskBusVirtio {
			b.fail(devPath+".bus", "a LUN needs bus scsi or virtio, not %q", bus)
			return nil
		}
		if d.LUN.Reservation {
			b.unsupported(devPath+".reservation", "persistent reservations need a pr-helper")
		}
	case d.CDRom != nil && d.LUN == nil && d.Disk == nil:
		devPath += ".cdrom"
		out.Device = "cdrom"
		bus, readOnly = d.CDRom.Bus, boolDefault(d.CDRom.ReadOnly, true)
		if bus == "" {
			bus = defaultBus
		}
		if bus == virtkit.DiskBusVirtio {
			b.fail(devPath+".bus", "a CD-ROM cannot use bus virtio")
			return nil
		}
		tray := d.CDRom.Tray
		if tray == "" {
			tray = virtkit.TrayStateClosed
		}
		if tray != virtkit.TrayStateClosed && tray != virtkit.TrayStateOpen {
			b.fail(devPath+".tray", "%q is not open or closed", tray)
		}
		out.Target = &libvirtxml.DomainDiskTarget{Tray: string(tray)}
	case d.LUN == nil && d.CDRom == nil:
		devPath += ".disk"
		out.Device = "disk"
		if d.Disk != nil {
			bus, readOnly = d.Disk.Bus, d.Disk.ReadOnly
			if d.Disk.PciAddress != "" {
				if bus != virtkit.DiskBusVirtio && bus != "" {
					b.fail(devPath+".pciAddress", "needs bus virtio")
				}
				addr, err := pciAddress(d.Disk.PciAddress)
				if err != nil {
					b.fail(devPath+".pciAddress", "%v", err)
				}
				out.Address = addr
			}
		}
		if bus == "" {
			bus = defaultBus
		}
	default:
		b.fail(path, "disk, lun and cdrom are mutually exclusive")
		return nil
	}

	var prefix string
	switch bus {
	case virtkit.DiskBusVirtio:
		prefix = "vd"
		out.Model = b.virtioModel()
	case virtkit.DiskBusSATA, virtkit.DiskBusSCSI, virtkit.DiskBusUSB:
		prefix = "sd"
		b.usbUsed = b.usbUsed || bus == virtkit.DiskBusUSB
	default:
		b.unsupported(devPath+".bus", fmt.Sprintf("bus %q", bus))
		return nil
	}
	target := knownTarget
	if !strings.HasPrefix(target, prefix) {
		target, _ = alloc.allocate(prefix)
	}
	if out.Target == nil {
		out.Target = &libvirtxml.DomainDiskTarget{}
	}
	out.Target.Dev, out.Target.Bus = target, string(bus)
	if bus == virtkit.DiskBusSCSI {
		// One virtio-scsi controller; the unit follows the target name so
		// it stays stable with it.
		unit := letterIndex(target[len(prefix):])
		out.Address = &libvirtxml.DomainAddress{Drive: &libvirtxml.DomainAddressDrive{
			Controller: uintp(0), Bus: uintp(0), Target: uintp(0), Unit: uintp(uint(unit)),
		}}
	}
	if d.BootOrder != nil {
		out.Boot = b.bootOrder(path+".bootOrder", *d.BootOrder)
	}
	for _, c := range d.Serial {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_.+-", c)) || len(d.Serial) > 256 {
			b.fail(path+".serial", "%q: only [A-Za-z0-9_.+-], at most 256 characters", d.Serial)
			break
		}
	}
	shareable := boolDefault(d.Shareable, false)
	if shareable {
		out.Shareable = &libvirtxml.DomainDiskShareable{}
	}

	if vi < 0 {
		// An empty drive: a file disk without a file, read-only, raw.
		out.Source = &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{}}
		out.ReadOnly = &libvirtxml.DomainDiskReadOnly{}
		out.Driver.Type = "raw"
		out.Driver.ErrorPolicy = string(virtkit.DiskErrorPolicyStop)
		return out
	}
	hv, isCloudInit, ok := b.resolveVolume(vi)
	if !ok {
		return nil
	}
	// A volume that is read-only by nature (a config ISO) is attached
	// read-only, except as a SATA disk: QEMU's SATA disks cannot be
	// read-only (libvirt refuses them), and KubeVirt attaches config disks
	// writable wherever they are; the ISO is rebuilt at every start.
	if hv.ReadOnly && !(out.Device == "disk" && bus == virtkit.DiskBusSATA) {
		readOnly = true
	}
	if readOnly {
		out.ReadOnly = &libvirtxml.DomainDiskReadOnly{}
	}
	switch hv.Type {
	case SourceFile, "":
		if out.Device == "lun" {
			b.fail(path+".lun", "a LUN needs a block device, volume %q is the file %s", d.Name, hv.Path)
			return nil
		}
		out.Source = &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: hv.Path}}
	case SourceBlock:
		out.Source = &libvirtxml.DomainDiskSource{Block: &libvirtxml.DomainDiskSourceBlock{Dev: hv.Path}}
	default:
		b.fail(fmt.Sprintf("spec.volumes[%d]", vi), "resolver returned source type %q", hv.Type)
		return nil
	}
	if hv.BackingPath != "" {
		out.BackingStore = &libvirtxml.DomainDiskBackingStore{
			Format: &libvirtxml.DomainDiskFormat{Type: hv.BackingFormat},
			Source: &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: hv.BackingPath}},
		}
	}
	drv := out.Driver
	drv.Type = hv.Format
	if drv.Type == "" {
		drv.Type = "raw"
	}
	drv.ErrorPolicy = string(virtkit.DiskErrorPolicyStop)
	if d.ErrorPolicy != nil {
		switch p := *d.ErrorPolicy; p {
		case virtkit.DiskErrorPolicyStop, virtkit.DiskErrorPolicyIgnore, virtkit.DiskErrorPolicyReport, virtkit.DiskErrorPolicyEnospace:
			drv.ErrorPolicy = string(p)
		default:
			b.fail(path+".errorPolicy", "unknown error policy %q", p)
		}
	}
	if out.Device != "cdrom" && !isCloudInit {
		drv.Discard = "unmap"
	}
	b.cacheAndIO(path, d, hv, shareable, drv)
	if !b.downwardMetricsDisk(path, vi, bus, out) {
		return nil
	}
	if bus == virtkit.DiskBusVirtio && boolDefault(b.vmi.Spec.Domain.Devices.BlockMultiQueue, false) {
		drv.Queues = uintp(b.vcpus)
	}
	return out
}

// cacheAndIO applies KubeVirt's cache and I/O rules: an unset cache is
// none when the source takes O_DIRECT, else writethrough; shareable forces
// none; io native only with cache none.
func (b *builder) cacheAndIO(path string, d virtkit.Disk, hv HostVolume, shareable bool, drv *libvirtxml.DomainDiskDriver) {
	cache := d.Cache
	switch cache {
	case "", virtkit.CacheNone, virtkit.CacheWriteThrough, virtkit.CacheWriteBack:
	default:
		b.fail(path+".cache", "%q is not none, writethrough or writeback", cache)
		return
	}
	switch d.IO {
	case "", virtkit.IONative, virtkit.IOThreads:
	default:
		b.fail(path+".io", "%q is not native or threads", d.IO)
		return
	}
	if shareable {
		if cache != "" && cache != virtkit.CacheNone {
			b.fail(path+".cache", "a shareable disk needs cache none, not %q", cache)
		}
		cache = virtkit.CacheNone
	}
	if cache == "" {
		switch {
		case d.IO == virtkit.IONative, hv.DirectIO == DirectIOYes:
			cache = virtkit.CacheNone
		default:
			cache = virtkit.CacheWriteThrough
		}
	}
	if cache == virtkit.CacheNone && hv.DirectIO == DirectIONo {
		b.fail(path+".cache", "cache none needs O_DIRECT, which %s does not support", hv.Path)
	}
	io := d.IO
	if io == virtkit.IONative && cache != virtkit.CacheNone {
		b.fail(path+".io", "native I/O needs cache none, not %q", cache)
	}
	if io == "" && cache == virtkit.CacheNone && hv.Type == SourceBlock {
		io = virtkit.IONative
	}
	drv.Cache, drv.IO = string(cache), string(io)
}

// resolveVolume turns volume vi into a host source through the resolver.
func (b *builder) resolveVolume(vi int) (HostVolume, bool, bool) {
	vol := &b.vmi.Spec.Volumes[vi]
	vpath := fmt.Sprintf("spec.volumes[%d]", vi)
	req := VolumeRequest{
		Namespace: namespaceOf(b.vmi), VMIName: b.vmi.Name, UID: string(b.vmi.UID),
		Volume: vol.Name, Index: vi,
	}
	var set []string
	cloudInit := false
	src := &vol.VolumeSource
	if c := src.ContainerDisk; c != nil {
		set = append(set, "containerDisk")
		req.Kind, req.Image, req.ImagePath = VolumeContainerDisk, c.Image, c.Path
		req.ImagePullPolicy, req.ImagePullSecret = string(c.ImagePullPolicy), c.ImagePullSecret
		if c.Image == "" {
			b.fail(vpath+".containerDisk.image", "required")
		}
	}
	if p := src.PersistentVolumeClaim; p != nil {
		set = append(set, "persistentVolumeClaim")
		req.Kind, req.ClaimName, req.ReadOnly = VolumePersistentVolumeClaim, p.ClaimName, p.ReadOnly
	}
	if dv := src.DataVolume; dv != nil {
		set = append(set, "dataVolume")
		req.Kind, req.ClaimName = VolumeDataVolume, dv.Name
	}
	if e := src.Ephemeral; e != nil {
		set = append(set, "ephemeral")
		req.Kind = VolumeEphemeral
		if e.PersistentVolumeClaim == nil {
			b.fail(vpath+".ephemeral.persistentVolumeClaim", "required")
		} else {
			req.ClaimName = e.PersistentVolumeClaim.ClaimName
		}
	}
	if e := src.EmptyDisk; e != nil {
		set = append(set, "emptyDisk")
		req.Kind = VolumeEmptyDisk
		c, ok := quantityBytes(e.Capacity)
		if !ok || c == 0 {
			b.fail(vpath+".emptyDisk.capacity", "must be a positive number of bytes")
		}
		req.Capacity = int64(c)
	}
	if h := src.HostDisk; h != nil {
		set = append(set, "hostDisk")
		req.Kind, req.Path, req.HostDiskType, req.Shared = VolumeHostDisk, h.Path, string(h.Type), boolDefault(h.Shared, false)
		if c, ok := quantityBytes(h.Capacity); ok {
			req.Capacity = int64(c)
		}
		resolved, err := b.opts.HostPaths.Check(h.Path)
		if err != nil {
			b.errs = append(b.errs, fmt.Errorf("%s.hostDisk.path: %w", vpath, err))
			return HostVolume{}, false, false
		}
		req.Path = resolved
	}
	if c := src.CloudInitNoCloud; c != nil {
		set = append(set, "cloudInitNoCloud")
		req.Kind = VolumeCloudInitNoCloud
		data := b.cloudInitData(vpath+".cloudInitNoCloud", c.UserData, c.UserDataBase64, c.UserDataSecretRef,
			c.NetworkData, c.NetworkDataBase64, c.NetworkDataSecretRef)
		req.CloudInit = noCloudImage(data)
		cloudInit = true
	}
	if c := src.CloudInitConfigDrive; c != nil {
		set = append(set, "cloudInitConfigDrive")
		req.Kind = VolumeCloudInitConfigDrive
		data := b.cloudInitData(vpath+".cloudInitConfigDrive", c.UserData, c.UserDataBase64, c.UserDataSecretRef,
			c.NetworkData, c.NetworkDataBase64, c.NetworkDataSecretRef)
		req.CloudInit = configDriveImage(data)
		cloudInit = true
	}
	if src.DownwardMetrics != nil {
		set = append(set, "downwardMetrics")
	}
	if !b.configVolume(src, vpath, &req, &set) {
		return HostVolume{}, false, false
	}
	if req.CloudInit != nil && !cloudInit {
		cloudInit = true // a config volume: an ISO like cloud-init's
	}
	switch len(set) {
	case 0:
		b.unsupported(vpath, "volume has no source the builder knows")
		return HostVolume{}, false, false
	case 1:
	default:
		b.fail(vpath, "exactly one volume source allowed, have %s", strings.Join(set, ", "))
		return HostVolume{}, false, false
	}
	if set[0] == "downwardMetrics" {
		return b.downwardMetricsVolume(), true, true // no resolver: the node's file
	}
	req.Field = vpath + "." + set[0]
	hv, err := b.opts.VolumeResolver.ResolveVolume(b.ctx, req)
	if err != nil {
		b.errs = append(b.errs, fmt.Errorf("%s: %w", req.Field, err))
		return HostVolume{}, false, false
	}
	if hv.Path == "" {
		b.fail(req.Field, "resolver returned no path: %w", ErrNotResolved)
		return HostVolume{}, false, false
	}
	return hv, cloudInit, true
}

func (b *builder) cloudInitData(path, userData, userData64 string, userSecret *virtkit.LocalObjectReference,
	netData, netData64 string, netSecret *virtkit.LocalObjectReference) cloudInitData {
	if userSecret != nil {
		if v, ok := b.cloudInitSecret(path+".secretRef", userSecret.Name, "userdata", "userData"); ok {
			userData, userData64 = string(v), ""
		}
	}
	if netSecret != nil {
		if v, ok := b.cloudInitSecret(path+".networkDataSecretRef", netSecret.Name, "networkdata", "networkData"); ok {
			netData, netData64 = string(v), ""
		}
	}
	d := cloudInitData{
		InstanceID: b.vmi.Name + "." + namespaceOf(b.vmi),
		Hostname:   b.vmi.Spec.Hostname,
	}
	if d.Hostname == "" {
		d.Hostname = b.vmi.Name
	}
	switch {
	case userData != "" && userData64 != "":
		b.fail(path, "userData and userDataBase64 are mutually exclusive")
	case userData64 != "":
		raw, err := base64.StdEncoding.DecodeString(userData64)
		if err != nil {
			b.fail(path+".userDataBase64", "not base64: %v", err)
		}
		d.UserData = raw
	default:
		d.UserData = []byte(userData)
	}
	switch {
	case netData != "" && netData64 != "":
		b.fail(path, "networkData and networkDataBase64 are mutually exclusive")
	case netData64 != "":
		raw, err := base64.StdEncoding.DecodeString(netData64)
		if err != nil {
			b.fail(path+".networkDataBase64", "not base64: %v", err)
		}
		d.NetworkData = raw
	case netData != "":
		d.NetworkData = []byte(netData)
	}
	return d
}

// letterIndex inverts diskLetters ("a" -> 0, "aa" -> 26).
func letterIndex(s string) int {
	n := 0
	for _, c := range s {
		n = n*26 + int(c-'a') + 1
	}
	return n - 1
}

// pciAddress parses a PCI address "dddd:bb:ss.f".
func pciAddress(s string) (*libvirtxml.DomainAddress, error) {
	var dom, bus, slot, fn uint64
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return nil, fmt.Errorf("%q is not a PCI address dddd:bb:ss.f", s)
	}
	sf := strings.Split(parts[2], ".")
	if len(sf) != 2 {
		return nil, fmt.Errorf("%q is not a PCI address dddd:bb:ss.f", s)
	}
	var err error
	for _, p := range []struct {
		s    string
		bits int
		v    *uint64
	}{{parts[0], 16, &dom}, {parts[1], 8, &bus}, {sf[0], 5, &slot}, {sf[1], 3, &fn}} {
		if *p.v, err = strconv.ParseUint(p.s, 16, p.bits); err != nil {
			return nil, fmt.Errorf("%q is not a PCI address dddd:bb:ss.f", s)
		}
	}
	u := func(v uint64) *uint { x := uint(v); return &x }
	return &libvirtxml.DomainAddress{PCI: &libvirtxml.DomainAddressPCI{
		Domain: u(dom), Bus: u(bus), Slot: u(slot), Function: u(fn),
	}}, nil
}
