package domain

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
)

// Filesystems (devices.filesystems) share volumes with the guest over
// virtiofs as KubeVirt's converter writes them: memory backed by memfd and
// shared (vhost-user needs it), and per share a
// <filesystem type='mount' accessmode='passthrough'> with
// <driver type='virtiofs' queue='1024'/>, the socket of an externally
// started virtiofsd as its source and the volume's name as its tag. The
// node starts virtiofsd on each share's directory before it starts the
// domain (see Shares); the builder does no I/O.

// VirtiofsQueueSize is the virtqueue size of a virtiofs device, as KubeVirt
// sets it.
const VirtiofsQueueSize = 1024

// Share is one virtiofs share of a VMI: what the node serves with
// virtiofsd.
type Share struct {
	// Name is the volume's name and the guest's mount tag.
	Name string
	// Field is the filesystem's path in the spec
	// (spec.domain.devices.filesystems[0]).
	Field string
	// Kind is the volume's kind (configMap, secret...).
	Kind VolumeKind
	// Dir is the host directory shared; the node writes Files into it.
	Dir string
	// Socket is virtiofsd's vhost-user socket, the domain's source.
	Socket string
	// Files are the volume's content.
	Files []ConfigFile
}

// VirtiofsDir is the host directory of a VMI's virtiofs shares: per share
// NAME a directory NAME/ with the content and a socket NAME.sock.
func VirtiofsDir(vmi *virtkit.VirtualMachineInstance, opts Options) string {
	return filepath.Join(RuntimeDir(vmi, opts), "virtiofs")
}

// Shares resolves a VMI's virtiofs shares: each filesystem's volume and its
// files (through Options.ConfigResolver). A volume kind that cannot be
// shared is an error wrapping ErrUnsupported naming the filesystem; a
// missing source wraps ErrConfigSourceMissing, as for config disks.
func Shares(ctx context.Context, vmi *virtkit.VirtualMachineInstance, opts Options) ([]Share, error) {
	if vmi == nil {
		return nil, errors.New("domain: nil VirtualMachineInstance")
	}
	b := &builder{ctx: ctx, vmi: vmi, opts: opts.withDefaults(), bootOrders: map[uint]string{}}
	shares := b.shares()
	if err := errors.Join(b.errs...); err != nil {
		return nil, err
	}
	return shares, nil
}

// sharedFS is one filesystem of the VMI whose volume virtiofs can share.
type sharedFS struct {
	fs     virtkit.Filesystem
	path   string // spec.domain.devices.filesystems[i]
	volume int    // index in spec.volumes
}

// sharedFilesystems checks each filesystem (virtiofs set, a volume of that
// name, a volume kind virtiofs shares) and returns those that pass; the
// others are recorded as the builder's errors.
func (b *builder) sharedFilesystems() []sharedFS {
	fss := b.vmi.Spec.Domain.Devices.Filesystems
	if len(fss) == 0 {
		return nil
	}
	volumes := map[string]int{}
	for i, v := range b.vmi.Spec.Volumes {
		volumes[v.Name] = i
	}
	var out []sharedFS
	for i, fs := range fss {
		path := fmt.Sprintf("spec.domain.devices.filesystems[%d]", i)
		if fs.Virtiofs == nil {
			b.fail(path+".virtiofs", "required")
			continue
		}
		vi, ok := volumes[fs.Name]
		if !ok {
			b.fail(path+".name", "no volume named %q", fs.Name)
			continue
		}
		if src := &b.vmi.Spec.Volumes[vi].VolumeSource; src.ContainerPath != nil {
			if _, ok := b.containerPath(src.ContainerPath, fmt.Sprintf("spec.volumes[%d].containerPath", vi)); !ok {
				continue
			}
		} else if !virtkit.VirtiofsSharable(src) || src.Sysprep != nil {
			b.unsupported(path, fmt.Sprintf("volume %q: only configMap, secret, serviceAccount and downwardAPI volumes are shared by virtiofs; virtkit's other volumes are disk images, not directories", fs.Name))
			continue
		}
		out = append(out, sharedFS{fs: fs, path: path, volume: vi})
	}
	return out
}

func (b *builder) shares() []Share {
	dir := VirtiofsDir(b.vmi, b.opts)
	var out []Share
	for _, sh := range b.sharedFilesystems() {
		var req VolumeRequest
		var set []string
		src := &b.vmi.Spec.Volumes[sh.volume].VolumeSource
		if src.ContainerPath != nil {
			files, ok := b.containerPathFiles(src.ContainerPath, fmt.Sprintf("spec.volumes[%d].containerPath", sh.volume))
			if !ok {
				continue
			}
			out = append(out, Share{
				Name: sh.fs.Name, Field: sh.path, Kind: VolumeContainerPath,
				Dir:    filepath.Join(dir, sh.fs.Name),
				Socket: filepath.Join(dir, sh.fs.Name+".sock"),
				Files:  files,
			})
			continue
		}
		if !b.configVolume(src, fmt.Sprintf("spec.volumes[%d]", sh.volume), &req, &set) || req.CloudInit == nil {
			continue
		}
		out = append(out, Share{
			Name: sh.fs.Name, Field: sh.path, Kind: req.Kind,
			Dir:    filepath.Join(dir, sh.fs.Name),
			Socket: filepath.Join(dir, sh.fs.Name+".sock"),
			Files:  req.CloudInit.Files,
		})
	}
	return out
}

// filesystems writes the <filesystem> devices and the shared memory
// backing they need. It checks what Shares checks but reads no content.
func (b *builder) filesystems(dom *libvirtxml.Domain) {
	if len(b.vmi.Spec.Domain.Devices.Filesystems) == 0 {
		return
	}
	dir := VirtiofsDir(b.vmi, b.opts)
	for _, sh := range b.sharedFilesystems() {
		dom.Devices.Filesystems = append(dom.Devices.Filesystems, libvirtxml.DomainFilesystem{
			AccessMode: "passthrough",
			Driver:     &libvirtxml.DomainFilesystemDriver{Type: "virtiofs", Queue: VirtiofsQueueSize},
			Source: &libvirtxml.DomainFilesystemSource{Mount: &libvirtxml.DomainFilesystemSourceMount{
				Socket: filepath.Join(dir, sh.fs.Name+".sock"),
			}},
			Target: &libvirtxml.DomainFilesystemTarget{Dir: sh.fs.Name},
		})
	}
	if dom.MemoryBacking == nil {
		dom.MemoryBacking = &libvirtxml.DomainMemoryBacking{}
	}
	if dom.MemoryBacking.MemoryHugePages == nil {
		dom.MemoryBacking.MemorySource = &libvirtxml.DomainMemorySource{Type: "memfd"}
	}
	dom.MemoryBacking.MemoryAccess = &libvirtxml.DomainMemoryAccess{Mode: "shared"}
}
