package domain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// DirResolver is the default VolumeResolver and KernelResolver: it maps
// every volume into a working directory.
//
//	containerDisk          Images[image], else Dir/images/<image>.img (or
//	                       Dir/images/<image>/<path>), behind a qcow2
//	                       overlay Dir/vmis/<id>/<volume>.qcow2
//	persistentVolumeClaim  Dir/pvc/<namespace>/<claim>.img (file or block device)
//	dataVolume             Dir/dv/<namespace>/<name>.img
//	ephemeral              a qcow2 overlay over the PVC's image
//	emptyDisk              Dir/vmis/<id>/<volume>.qcow2 (sparse qcow2)
//	hostDisk               its path
//	cloud-init             Dir/vmis/<id>/<volume>.iso
//	config volumes         Dir/vmis/<id>/<volume>.iso (configMap, secret,
//	                       serviceAccount, downwardAPI, sysprep; read-only)
//	kernelBoot.container   Kernels[image], else Dir/kernels/<image>/<kernelPath>
//
// <id> is the VMI's UID, or namespace_name when it has none. <image> is the
// image reference with every character outside [A-Za-z0-9._-] replaced.
//
// With Create unset it only computes paths (no I/O, so Build stays pure
// and golden files stay stable). With Create set it makes the files the
// domain needs: overlays, empty disks, ISOs, DiskOrCreate host disks, and
// it probes base image formats, block devices and O_DIRECT support.
type DirResolver struct {
	// Dir is the working directory; default /var/lib/virtkit.
	Dir string
	// Images maps containerDisk image references to host image files.
	Images map[string]string
	// Kernels maps kernelBoot container images to host kernel/initrd.
	Kernels map[string]HostKernel
	// Create makes the resolver create and probe files.
	Create bool
}

var (
	_ VolumeResolver = (*DirResolver)(nil)
	_ KernelResolver = (*DirResolver)(nil)
)

func (r *DirResolver) dir() string {
	if r.Dir == "" {
		return DefaultWorkDir
	}
	return r.Dir
}

// VMIDir is the directory holding one VMI's generated files.
func (r *DirResolver) VMIDir(namespace, name, uid string) string {
	return filepath.Join(r.dir(), "vmis", instanceID(namespace, name, uid))
}

func instanceID(namespace, name, uid string) string {
	if uid != "" {
		return sanitize(uid)
	}
	return sanitize(namespace + "_" + name)
}

// sanitize keeps a string usable as one path element.
func sanitize(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || string(b) == "." || string(b) == ".." {
		return "_" + string(b)
	}
	return string(b)
}

// ResolveVolume implements VolumeResolver.
func (r *DirResolver) ResolveVolume(ctx context.Context, req VolumeRequest) (HostVolume, error) {
	if err := ctx.Err(); err != nil {
		return HostVolume{}, err
	}
	vmiDir := r.VMIDir(req.Namespace, req.VMIName, req.UID)
	switch req.Kind {
	case VolumeContainerDisk:
		base := r.Images[req.Image]
		if base == "" {
			base = filepath.Join(r.dir(), "images", sanitize(req.Image)+".img")
			if req.ImagePath != "" {
				base = filepath.Join(r.dir(), "images", sanitize(req.Image), filepath.Clean("/"+req.ImagePath))
			}
		}
		return r.overlay(req, base, filepath.Join(vmiDir, sanitize(req.Volume)+".qcow2"))
	case VolumeEphemeral:
		base := filepath.Join(r.dir(), "pvc", sanitize(req.Namespace), sanitize(req.ClaimName)+".img")
		return r.overlay(req, base, filepath.Join(vmiDir, sanitize(req.Volume)+".qcow2"))
	case VolumePersistentVolumeClaim:
		return r.existing(req, filepath.Join(r.dir(), "pvc", sanitize(req.Namespace), sanitize(req.ClaimName)+".img"))
	case VolumeDataVolume:
		return r.existing(req, filepath.Join(r.dir(), "dv", sanitize(req.Namespace), sanitize(req.ClaimName)+".img"))
	case VolumeHostDisk:
		if req.HostDiskType == "DiskOrCreate" && r.Create {
			if err := createSparse(req.Path, req.Capacity); err != nil {
				return HostVolume{}, err
			}
		}
		return r.existing(req, req.Path)
	case VolumeEmptyDisk:
		p := filepath.Join(vmiDir, sanitize(req.Volume)+".qcow2")
		v := HostVolume{Type: SourceFile, Path: p, Format: "qcow2"}
		if !r.Create {
			return v, nil
		}
		if req.Capacity <= 0 {
			return HostVolume{}, errors.New("capacity must be positive")
		}
		err := createFile(p, false, func(w io.Writer) error { return WriteQcow2(w, uint64(req.Capacity), "", "") })
		if err != nil {
			return HostVolume{}, err
		}
		v.DirectIO = probeDirectIO(p)
		return v, nil
	case VolumeCloudInitNoCloud, VolumeCloudInitConfigDrive,
		VolumeConfigMap, VolumeSecret, VolumeServiceAccount, VolumeDownwardAPI, VolumeSysprep:
		if req.CloudInit == nil {
			return HostVolume{}, fmt.Errorf("no ISO image prepared: %w", ErrNotResolved)
		}
		p := filepath.Join(vmiDir, sanitize(req.Volume)+".iso")
		v := HostVolume{Type: SourceFile, Path: p, Format: "raw", ReadOnly: req.ReadOnly}
		if !r.Create {
			return v, nil
		}
		err := createFile(p, true, func(w io.Writer) error { _, err := req.CloudInit.WriteTo(w); return err })
		if err != nil {
			return HostVolume{}, err
		}
		v.DirectIO = probeDirectIO(p)
		return v, nil
	}
	return HostVolume{}, fmt.Errorf("volume kind %q: %w", req.Kind, ErrUnsupported)
}

// existing maps a volume to a file or block device that must already exist
// (checked only with Create).
func (r *DirResolver) existing(req VolumeRequest, p string) (HostVolume, error) {
	v := HostVolume{Type: SourceFile, Path: p, Format: "raw", ReadOnly: req.ReadOnly}
	if !r.Create {
		if strings.HasPrefix(p, "/dev/") {
			v.Type = SourceBlock
		}
		return v, nil
	}
	st, err := os.Stat(p)
	if err != nil {
		return HostVolume{}, fmt.Errorf("%w: %w", ErrNotResolved, err)
	}
	if st.Mode()&fs.ModeDevice != 0 && st.Mode()&fs.ModeCharDevice == 0 {
		v.Type = SourceBlock
	}
	if f, ok := imageFormat(p); ok {
		v.Format = f
	}
	v.DirectIO = probeDirectIO(p)
	return v, nil
}

// overlay puts a fresh copy-on-write qcow2 over a read-only base image, the
// way KubeVirt serves container disks: the guest never writes the base.
func (r *DirResolver) overlay(req VolumeRequest, base, p string) (HostVolume, error) {
	v := HostVolume{Type: SourceFile, Path: p, Format: "qcow2", BackingPath: base, BackingFormat: "raw"}
	if strings.HasSuffix(base, ".qcow2") {
		v.BackingFormat = "qcow2"
	}
	if !r.Create {
		return v, nil
	}
	size, format, err := imageSize(base)
	if err != nil {
		return HostVolume{}, fmt.Errorf("base image: %w: %w", ErrNotResolved, err)
	}
	v.BackingFormat = format
	err = createFile(p, false, func(w io.Writer) error { return WriteQcow2(w, size, base, format) })
	if err != nil {
		return HostVolume{}, err
	}
	v.DirectIO = probeDirectIO(p)
	return v, nil
}

// ResolveKernel implements KernelResolver.
func (r *DirResolver) ResolveKernel(ctx context.Context, req KernelRequest) (HostKernel, error) {
	if err := ctx.Err(); err != nil {
		return HostKernel{}, err
	}
	if k, ok := r.Kernels[req.Image]; ok {
		return k, nil
	}
	root := filepath.Join(r.dir(), "kernels", sanitize(req.Image))
	var k HostKernel
	if req.KernelPath != "" {
		k.Kernel = filepath.Join(root, filepath.Clean("/"+req.KernelPath))
	}
	if req.InitrdPath != "" {
		k.Initrd = filepath.Join(root, filepath.Clean("/"+req.InitrdPath))
	}
	if r.Create {
		for _, p := range []string{k.Kernel, k.Initrd} {
			if p == "" {
				continue
			}
			if _, err := os.Stat(p); err != nil {
				return HostKernel{}, fmt.Errorf("%w: %w", ErrNotResolved, err)
			}
		}
	}
	return k, nil
}

// imageFormat sniffs qcow2 vs raw.
func imageFormat(p string) (string, bool) {
	f, err := os.Open(p)
	if err != nil {
		return "", false
	}
	defer f.Close()
	hdr := make([]byte, 32)
	if _, err := io.ReadFull(f, hdr); err != nil {
		return "raw", true
	}
	if _, ok := qcow2VirtualSize(hdr); ok {
		return "qcow2", true
	}
	return "raw", true
}

// imageSize returns the virtual size and format of a base image.
func imageSize(p string) (uint64, string, error) {
	f, err := os.Open(p)
	if err != nil {
		return 0, "", err
	}
	defer f.Close()
	hdr := make([]byte, 32)
	n, _ := io.ReadFull(f, hdr)
	if size, ok := qcow2VirtualSize(hdr[:n]); ok {
		return size, "qcow2", nil
	}
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return 0, "", err
	}
	if end <= 0 {
		return 0, "", errors.New(p + " is empty")
	}
	return uint64(end), "raw", nil
}

// createFile writes a file through a temporary name and a rename, so a
// crash never leaves a half-written image. Unless replace is set an
// existing file is kept (a restarted VMI keeps its empty disk).
func createFile(p string, replace bool, write func(io.Writer) error) error {
	if !replace {
		if _, err := os.Stat(p); err == nil {
			return nil
		}
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := write(&buf); err != nil {
		return err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, p); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return nil
}

// createSparse creates a sparse raw file of size bytes unless p exists.
func createSparse(p string, size int64) error {
	if _, err := os.Stat(p); err == nil {
		return nil
	}
	if size <= 0 {
		return fmt.Errorf("capacity must be positive to create %s", p)
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// WriteQcow2 writes an empty qcow2 (v3) image of virtual size bytes; with
// backingFile set it is a copy-on-write overlay of that file (backingFormat
// raw or qcow2). The image holds only metadata, a few hundred KiB.
func WriteQcow2(w io.Writer, size uint64, backingFile, backingFormat string) error {
	return writeQcow2(w, size, backingFile, backingFormat)
}

// NetResolver is the default NetworkResolver.
//
// The pod network goes on libvirt user-mode networking (NAT through the
// host's stack, like KubeVirt's masquerade) unless PodNetwork names a
// libvirt network. Multus networks resolve through Multus by their
// networkName; SR-IOV interfaces need a Multus entry of type AttachHostdev.
type NetResolver struct {
	// PodNetwork names a libvirt network for the pod network; empty means
	// user-mode networking.
	PodNetwork string
	// Multus maps multus networkName values to host attachments.
	Multus map[string]HostNetwork
	// LibvirtNetworkFallback attaches a multus network missing from Multus
	// to the libvirt network named like it (the part after "namespace/").
	// SR-IOV interfaces never fall back: they need a device.
	LibvirtNetworkFallback bool
}

var _ NetworkResolver = (*NetResolver)(nil)

// ResolveNetwork implements NetworkResolver.
func (r *NetResolver) ResolveNetwork(ctx context.Context, req NetworkRequest) (HostNetwork, error) {
	if err := ctx.Err(); err != nil {
		return HostNetwork{}, err
	}
	switch req.Kind {
	case NetworkPod:
		if req.Binding == "sriov" {
			return HostNetwork{}, fmt.Errorf("SR-IOV on the pod network: %w", ErrNotResolved)
		}
		if r.PodNetwork != "" {
			return HostNetwork{Type: AttachNetwork, Source: r.PodNetwork}, nil
		}
		return HostNetwork{Type: AttachUser}, nil
	case NetworkMultus:
		att, ok := r.Multus[req.MultusNetworkName]
		if !ok && r.LibvirtNetworkFallback && req.Binding != "sriov" && req.MultusNetworkName != "" {
			name := req.MultusNetworkName[strings.LastIndexByte(req.MultusNetworkName, '/')+1:]
			return HostNetwork{Type: AttachNetwork, Source: name}, nil
		}
		if !ok {
			return HostNetwork{}, fmt.Errorf("multus network %q has no host attachment: %w", req.MultusNetworkName, ErrNotResolved)
		}
		if req.Binding == "sriov" && att.Type != AttachHostdev {
			return HostNetwork{}, fmt.Errorf("multus network %q has no SR-IOV device: %w", req.MultusNetworkName, ErrNotResolved)
		}
		return att, nil
	}
	return HostNetwork{}, fmt.Errorf("network kind %q: %w", req.Kind, ErrUnsupported)
}
