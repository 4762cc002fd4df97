package main

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/cluster"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/hypervisor/libvirt"
	"github.com/virtkit/virtkit/node"
)

//go:embed demo-libvirt.yaml
var demoLibvirtManifests []byte

// tinyGuestImage is the kernelBoot image of demo-libvirt.yaml.
const tinyGuestImage = "localhost/virtkit/tiny-guest:latest"

// The two local daemons hack/realstack/libvirtd.sh starts: A (the system
// daemon) and B (its own mount namespace and host UUID, on TCP).
const (
	sourceURI = "qemu:///system"
	peerURI   = "qemu+tcp://127.0.0.1:16510/system"
)

// findTinyGuest locates the guest hack/realstack/build-guest.sh builds:
// $VIRTKIT_GUEST_DIR, else build/guest in the working directory or the
// nearest parent that has one.
func findTinyGuest() (domain.HostKernel, error) {
	dir := os.Getenv("VIRTKIT_GUEST_DIR")
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return domain.HostKernel{}, err
		}
		for d := wd; ; d = filepath.Dir(d) {
			if _, err := os.Stat(filepath.Join(d, "build", "guest", "vmlinuz")); err == nil {
				dir = filepath.Join(d, "build", "guest")
				break
			}
			if filepath.Dir(d) == d {
				return domain.HostKernel{}, fmt.Errorf("tiny guest: no build/guest in %s or above", wd)
			}
		}
	}
	k := domain.HostKernel{Kernel: filepath.Join(dir, "vmlinuz"), Initrd: filepath.Join(dir, "initramfs.gz")}
	for _, f := range []string{k.Kernel, k.Initrd} {
		if _, err := os.Stat(f); err != nil {
			return domain.HostKernel{}, fmt.Errorf("tiny guest: %w", err)
		}
	}
	return k, nil
}

// libvirtDemoOptions puts node i on the i-th libvirt URI (default: the two
// local daemons hack/realstack/libvirtd.sh starts), with the tiny guest's
// kernel and initramfs for kernel boot.
func libvirtDemoOptions(ctx context.Context, o demoOptions, copts cluster.Options) (cluster.Options, func(), error) {
	uris := []string{sourceURI, peerURI}
	if o.uri != "" {
		uris = strings.Split(o.uri, ",")
	}
	if o.nodes > len(uris) {
		return copts, nil, fmt.Errorf("--nodes %d: only %d libvirt URIs (give more with --uri A,B,...)", o.nodes, len(uris))
	}
	guest, err := findTinyGuest()
	if err != nil {
		return copts, nil, fmt.Errorf("--hypervisor libvirt: %w (build it with hack/realstack/build-guest.sh)", err)
	}
	qemu, err := user.Lookup("libvirt-qemu")
	if err != nil {
		return copts, nil, fmt.Errorf("--hypervisor libvirt: %w (install Debian libvirt-daemon-system)", err)
	}
	uid, _ := strconv.Atoi(qemu.Uid)
	gid, _ := strconv.Atoi(qemu.Gid)
	work, err := os.MkdirTemp("", "virtkit-demo-")
	if err != nil {
		return copts, nil, err
	}
	// QEMU runs as libvirt-qemu and must reach the work and runtime dirs.
	if err := os.Chmod(work, 0o755); err != nil {
		return copts, nil, err
	}
	copts.Domain = domain.Options{
		Type: domain.TypeQEMU,
		VolumeResolver: &domain.DirResolver{Dir: filepath.Join(work, "volumes"), Create: true,
			Kernels: map[string]domain.HostKernel{tinyGuestImage: guest}},
	}
	copts.NodeAgent.RuntimeDirOwner = &node.Owner{UID: uid, GID: gid}
	// Each node gets its own runtime dir: two QEMUs of one guest (source
	// and target of a migration) must not bind the same agent socket.
	domainOf := func(name string) domain.Options {
		d := copts.Domain
		d.RuntimeDir = filepath.Join(work, "run-"+name)
		return d
	}
	var conns []*libvirt.Hypervisor
	uriOf := map[string]string{}
	copts.NewHypervisor = func(name string) (hypervisor.Hypervisor, error) {
		// QEMU (libvirt-qemu) must traverse the node's runtime dir.
		if err := os.MkdirAll(domainOf(name).RuntimeDir, 0o755); err != nil {
			return nil, err
		}
		uri := uris[len(conns)]
		h, err := libvirt.New(ctx, libvirt.Options{URI: uri})
		if err != nil {
			return nil, err
		}
		conns = append(conns, h)
		uriOf[name] = uri
		return h, nil
	}
	// Other daemons reach a node's daemon over TCP (a local unix URI
	// would name the sender itself); the data goes over loopback on a
	// port the target picks.
	copts.ConfigureNode = func(name string, o *node.Options) {
		o.Domain = domainOf(name)
		o.Migration.URI = migrationURIOf(uriOf[name])
		o.Migration.DataURI = "tcp://127.0.0.1"
		// The guest arrives with the target's own runtime paths.
		o.Migration.DestinationXML = func(vmi *virtkit.VirtualMachineInstance, target, sourceXML string) (string, error) {
			from, to := domain.RuntimeDir(vmi, domainOf(name)), domain.RuntimeDir(vmi, domainOf(target))
			return strings.ReplaceAll(sourceXML, from, to), nil
		}
	}
	cleanup := func() {
		for _, c := range conns {
			_ = c.Close()
		}
		_ = os.RemoveAll(work)
	}
	return copts, cleanup, nil
}

// migrationURIOf is how another daemon reaches the daemon at uri:
// qemu:///system becomes the TCP listener hack/realstack/libvirtd.sh gives
// instance A.
func migrationURIOf(uri string) string {
	if uri == sourceURI {
		return "qemu+tcp://127.0.0.1:16509/system"
	}
	return uri
}
