package domain

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"encoding/xml"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit"
)

// KubeVirtMetadataNamespace is the XML namespace of the <kubevirt> element
// in <metadata>, as KubeVirt writes it.
const KubeVirtMetadataNamespace = "http://kubevirt.io"

// GuestAgentChannel is the virtio-serial port name qemu-ga listens on.
const GuestAgentChannel = "org.qemu.guest_agent.0"

// userAliasPrefix marks aliases chosen by the user (libvirt requires it).
const userAliasPrefix = "ua-"

// Build maps a VMI (already defaulted and validated) to a libvirt domain.
// It is deterministic: the same VMI and Options give the same document.
// Build does no I/O itself; resolvers in Options may (see DirResolver).
// Fields it cannot express give errors that wrap ErrUnsupported and name
// the field path; all such errors are returned together.
func Build(vmi *virtkit.VirtualMachineInstance, opts Options) (*libvirtxml.Domain, error) {
	return BuildContext(context.Background(), vmi, opts)
}

// BuildContext is Build with a context for the resolvers.
func BuildContext(ctx context.Context, vmi *virtkit.VirtualMachineInstance, opts Options) (*libvirtxml.Domain, error) {
	if vmi == nil {
		return nil, errors.New("domain: nil VirtualMachineInstance")
	}
	b := &builder{ctx: ctx, vmi: vmi, opts: opts.withDefaults(), userEFI: opts.EFI, bootOrders: map[uint]string{}}
	dom := b.build()
	if err := errors.Join(b.errs...); err != nil {
		return nil, err
	}
	for i, m := range b.opts.Mutators {
		if m == nil {
			continue
		}
		if err := m(vmi, dom); err != nil {
			return nil, fmt.Errorf("domain: mutator %d: %w", i, err)
		}
	}
	return dom, nil
}

// BuildXML is Build followed by marshalling to an XML document.
func BuildXML(vmi *virtkit.VirtualMachineInstance, opts Options) (string, error) {
	dom, err := Build(vmi, opts)
	if err != nil {
		return "", err
	}
	return dom.Marshal()
}

// DomainName is the libvirt domain name of a VMI: <namespace>_<name>.
func DomainName(vmi *virtkit.VirtualMachineInstance) string {
	return namespaceOf(vmi) + "_" + vmi.Name
}

func namespaceOf(vmi *virtkit.VirtualMachineInstance) string {
	if vmi.Namespace == "" {
		return "default"
	}
	return vmi.Namespace
}

// RuntimeDir is the directory holding one VMI's sockets and console log.
func RuntimeDir(vmi *virtkit.VirtualMachineInstance, opts Options) string {
	dir := opts.RuntimeDir
	if dir == "" {
		dir = DefaultRuntimeDir
	}
	return filepath.Join(dir, instanceID(namespaceOf(vmi), vmi.Name, string(vmi.UID)))
}

// GuestAgentSocket is the host unix socket of a VMI's guest-agent channel.
func GuestAgentSocket(vmi *virtkit.VirtualMachineInstance, opts Options) string {
	return filepath.Join(RuntimeDir(vmi, opts), "qga.sock")
}

// SerialConsoleSocket is the host unix socket of the serial console.
func SerialConsoleSocket(vmi *virtkit.VirtualMachineInstance, opts Options) string {
	return filepath.Join(RuntimeDir(vmi, opts), "serial0.sock")
}

// VNCSocket is the host unix socket of the VNC display.
func VNCSocket(vmi *virtkit.VirtualMachineInstance, opts Options) string {
	return filepath.Join(RuntimeDir(vmi, opts), "vnc.sock")
}

type builder struct {
	ctx  context.Context
	vmi  *virtkit.VirtualMachineInstance
	opts Options
	errs []error

	userEFI    EFIPaths
	bootOrders map[uint]string // order -> field path that claimed it

	arch    string
	vcpus   uint
	usbUsed bool
	efi     bool
}

func (b *builder) fail(path string, format string, args ...any) {
	b.errs = append(b.errs, fmt.Errorf("%s: "+format, append([]any{path}, args...)...))
}

func (b *builder) unsupported(path, why string) {
	if why == "" {
		b.errs = append(b.errs, fmt.Errorf("%s: %w", path, ErrUnsupported))
		return
	}
	b.errs = append(b.errs, fmt.Errorf("%s: %s: %w", path, why, ErrUnsupported))
}

func (b *builder) build() *libvirtxml.Domain {
	spec := &b.vmi.Spec
	switch b.opts.Type {
	case TypeQEMU, TypeKVM:
	default:
		b.fail("Options.Type", "domain type %q is not %q or %q", b.opts.Type, TypeQEMU, TypeKVM)
	}
	b.arch = b.opts.Arch
	if b.arch == "" {
		switch spec.Architecture {
		case "", "amd64":
			b.arch = "x86_64"
		case "arm64":
			b.arch = "aarch64"
		case "s390x":
			b.arch = "s390x"
		default:
			b.unsupported("spec.architecture", fmt.Sprintf("architecture %q", spec.Architecture))
			b.arch = "x86_64"
		}
	}
	if b.vmi.Name == "" {
		b.fail("metadata.name", "required")
	}

	dom := &libvirtxml.Domain{
		Type:     b.opts.Type,
		Name:     DomainName(b.vmi),
		Metadata: b.metadata(),
		Devices:  &libvirtxml.DomainDeviceList{Emulator: b.opts.Emulator},
	}
	dom.UUID = b.uuid()
	b.cpu(dom)
	b.memory(dom)
	b.os(dom)
	b.sysinfo(dom)
	b.features(dom)
	b.clock(dom)
	b.disks(dom)
	b.interfaces(dom)
	b.devices(dom)
	b.filesystems(dom)
	b.watchdog(dom)
	b.hostDependent(dom)
	b.controllers(dom)
	b.launchSecurity(dom)
	return dom
}

// kubevirtMetadata is KubeVirt's <kubevirt xmlns="http://kubevirt.io">
// metadata element, reduced to what identifies the VMI.
type kubevirtMetadata struct {
	XMLName     xml.Name            `xml:"http://kubevirt.io kubevirt"`
	UID         string              `xml:"uid,omitempty"`
	Namespace   string              `xml:"namespace"`
	Name        string              `xml:"name"`
	Node        string              `xml:"node,omitempty"`
	GracePeriod gracePeriodMetadata `xml:"graceperiod"`
}

type gracePeriodMetadata struct {
	DeletionGracePeriodSeconds int64 `xml:"deletionGracePeriodSeconds"`
}

func (b *builder) metadata() *libvirtxml.DomainMetadata {
	grace := virtkit.DefaultGracePeriodSeconds
	if g := b.vmi.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	raw, err := xml.Marshal(kubevirtMetadata{
		UID:         string(b.vmi.UID),
		Namespace:   namespaceOf(b.vmi),
		Name:        b.vmi.Name,
		Node:        b.opts.NodeName,
		GracePeriod: gracePeriodMetadata{DeletionGracePeriodSeconds: grace},
	})
	if err != nil { // only strings and ints: cannot happen
		b.fail("metadata", "%v", err)
		return nil
	}
	return &libvirtxml.DomainMetadata{XML: string(raw)}
}

// uuid returns firmware.uuid, or a UUIDv5 of namespace/name so a VMI built
// without defaults still gets a stable identity.
func (b *builder) uuid() string {
	fw := b.vmi.Spec.Domain.Firmware
	if fw != nil && fw.UUID != "" {
		u := strings.ToLower(string(fw.UUID))
		if !isUUID(u) {
			b.fail("spec.domain.firmware.uuid", "%q is not a UUID", fw.UUID)
		}
		return u
	}
	return uuidV5(virtkit.FirmwareUUIDNamespace, namespaceOf(b.vmi)+"/"+b.vmi.Name)
}

func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, c := range s {
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
				return false
			}
		}
	}
	return true
}

func uuidV5(namespace, name string) string {
	nsb, _ := hex.DecodeString(strings.ReplaceAll(namespace, "-", ""))
	h := sha1.Sum(append(nsb, name...))
	u := h[:16]
	u[6] = u[6]&0x0f | 0x50
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// bootOrder records a device boot order; libvirt rejects duplicates.
func (b *builder) bootOrder(path string, order uint) *libvirtxml.DomainDeviceBoot {
	if order == 0 {
		b.fail(path, "must be positive")
	} else if prev, dup := b.bootOrders[order]; dup {
		b.fail(path, "boot order %d is already used by %s", order, prev)
	} else {
		b.bootOrders[order] = path
	}
	return &libvirtxml.DomainDeviceBoot{Order: order}
}

func boolDefault(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

func onOff(v bool) string {
	if v {
		return "on"
	}
	return "off"
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

func uintp(v uint) *uint { return &v }

// quantityBytes returns q in bytes ("1.5Gi" included, as Kubernetes reads
// it), or false for negative, fractional or too large values.
func quantityBytes(q resource.Quantity) (uint64, bool) {
	v, ok := virtkit.QuantityBytes(q)
	if !ok {
		return 0, false
	}
	return uint64(v), true
}

// quantityBytesProblem says why quantityBytes refused q.
func quantityBytesProblem(q resource.Quantity) string {
	switch {
	case q.Sign() < 0:
		return "is negative"
	case q.Cmp(*resource.NewQuantity(math.MaxInt64, resource.BinarySI)) >= 0:
		// apimachinery caps quantities beyond int64 at 2^63-1.
		return fmt.Sprintf("is too large: must be less than %d bytes", int64(math.MaxInt64))
	}
	return "is not a whole number of bytes"
}

// virtioModel is the virtio device model libvirt should use: transitional
// devices also work with old guest drivers (legacy PCI).
func (b *builder) virtioModel() string {
	if boolDefault(b.vmi.Spec.Domain.Devices.UseVirtioTransitional, false) {
		return "virtio-transitional"
	}
	return "virtio-non-transitional"
}

// MakeRuntimeDir creates RuntimeDir(vmi, opts) for the sockets and the
// console log QEMU creates there when the domain starts. QEMU runs as its
// own user (libvirt-qemu on Debian): pass that uid and gid so it may
// create them, or -1 to keep the caller's.
func MakeRuntimeDir(vmi *virtkit.VirtualMachineInstance, opts Options, uid, gid int) (string, error) {
	dir := RuntimeDir(vmi, opts)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	if err := os.Chmod(dir, 0o750); err != nil {
		return "", err
	}
	if uid != -1 || gid != -1 {
		if err := os.Chown(dir, uid, gid); err != nil {
			return "", err
		}
	}
	return dir, nil
}
