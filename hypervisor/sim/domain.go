package sim

import (
	"crypto/sha256"
	"fmt"
	"regexp"
	"strings"
	"time"

	"libvirt.org/go/libvirtxml"

	"github.com/virtkit/virtkit/hypervisor"
)

const agentChannelName = "org.qemu.guest_agent.0"

// spec is what the simulator reads from a domain definition.
type spec struct {
	def        *libvirtxml.Domain
	name, uuid string
	vcpus      int
	maxMemory  uint64 // bytes
	curMemory  uint64 // bytes
	interfaces int
	disks      []diskSpec
	agent      bool // has the org.qemu.guest_agent.0 channel
}

type diskSpec struct {
	target, path string
}

var uuidPattern = regexp.MustCompile(`^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$`)

func invalid(field, why string) error {
	return fmt.Errorf("%s: %s: %w", field, why, hypervisor.ErrInvalidArgument)
}

// parseSpec reads a libvirt domain XML document.
func parseSpec(domainXML string) (*spec, error) {
	def := &libvirtxml.Domain{}
	if err := def.Unmarshal(domainXML); err != nil {
		return nil, fmt.Errorf("domain XML: %v: %w", err, hypervisor.ErrInvalidArgument)
	}
	if def.Name == "" {
		return nil, invalid("domain.name", "required")
	}
	if strings.ContainsAny(def.Name, "/\x00") {
		return nil, invalid("domain.name", fmt.Sprintf("%q contains '/' or NUL", def.Name))
	}
	if def.UUID != "" && !uuidPattern.MatchString(def.UUID) {
		return nil, invalid("domain.uuid", fmt.Sprintf("%q is not a UUID", def.UUID))
	}
	if def.Memory == nil || def.Memory.Value == 0 {
		return nil, invalid("domain.memory", "required and positive")
	}
	maxMem, err := scaled(uint64(def.Memory.Value), def.Memory.Unit)
	if err != nil {
		return nil, invalid("domain.memory.unit", err.Error())
	}
	curMem := maxMem
	if def.CurrentMemory != nil && def.CurrentMemory.Value > 0 {
		if curMem, err = scaled(uint64(def.CurrentMemory.Value), def.CurrentMemory.Unit); err != nil {
			return nil, invalid("domain.currentMemory.unit", err.Error())
		}
		if curMem > maxMem {
			return nil, invalid("domain.currentMemory", "larger than domain.memory")
		}
	}
	if maxMem, curMem, err = virtioMemSizes(def, maxMem, curMem); err != nil {
		return nil, err
	}
	// Store sizes the way libvirt reports them: KiB.
	def.Memory = &libvirtxml.DomainMemory{Value: uint(maxMem >> 10), Unit: "KiB"}
	def.CurrentMemory = &libvirtxml.DomainCurrentMemory{Value: uint(curMem >> 10), Unit: "KiB"}
	vcpus := 1
	if def.VCPU != nil && def.VCPU.Value > 0 {
		vcpus = int(def.VCPU.Value)
		if def.VCPU.Current > 0 && int(def.VCPU.Current) < vcpus {
			vcpus = int(def.VCPU.Current)
		}
	}
	s := &spec{def: def, name: def.Name, uuid: strings.ToLower(def.UUID), vcpus: vcpus, maxMemory: maxMem, curMemory: curMem}
	if dev := def.Devices; dev != nil {
		s.interfaces = len(dev.Interfaces)
		for i, d := range dev.Disks {
			ds := diskSpec{target: fmt.Sprintf("disk%d", i)}
			if d.Target != nil && d.Target.Dev != "" {
				ds.target = d.Target.Dev
			}
			if d.Source != nil {
				switch {
				case d.Source.File != nil:
					ds.path = d.Source.File.File
				case d.Source.Block != nil:
					ds.path = d.Source.Block.Dev
				}
			}
			s.disks = append(s.disks, ds)
		}
		for _, c := range dev.Channels {
			if c.Target != nil && c.Target.VirtIO != nil && c.Target.VirtIO.Name == agentChannelName {
				s.agent = true
			}
		}
	}
	return s, nil
}

// scaled converts a libvirt memory value to bytes (libvirt's default unit
// is KiB).
func scaled(v uint64, unit string) (uint64, error) {
	mult := map[string]uint64{
		"": 1 << 10, "b": 1, "bytes": 1,
		"k": 1 << 10, "kib": 1 << 10, "kb": 1000,
		"m": 1 << 20, "mib": 1 << 20, "mb": 1000 * 1000,
		"g": 1 << 30, "gib": 1 << 30, "gb": 1000 * 1000 * 1000,
		"t": 1 << 40, "tib": 1 << 40, "tb": 1000 * 1000 * 1000 * 1000,
	}[strings.ToLower(unit)]
	if mult == 0 {
		return 0, fmt.Errorf("unknown unit %q", unit)
	}
	return v * mult, nil
}

// stableUUID derives a UUID from seed, so a simulation defines the same
// domains with the same identities on every run.
func stableUUID(seed string) string {
	sum := sha256.Sum256([]byte(seed))
	sum[6] = sum[6]&0x0f | 0x40 // version 4 layout
	sum[8] = sum[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", sum[0:4], sum[4:6], sum[6:8], sum[8:10], sum[10:16])
}

// domain is one domain on a host. All fields are guarded by the host's mutex.
type domain struct {
	config     *spec // persistent definition
	live       *spec // definition the running instance was started from
	persistent bool
	id         int // libvirt's runtime id while active

	state  hypervisor.DomainState
	reason hypervisor.StateReason
	gen    uint64 // increments at every start and stop, invalidating timers

	// Runtime counters, integrated by advance.
	updated  time.Time
	cpu      float64 // ns
	netBytes float64
	blkBytes float64
	faults   float64

	workload Workload
	model    model
	throttle float64 // 0..0.99, set by a migration

	// Boot: the guest agent connects once the guest has run bootLeft.
	bootLeft  time.Duration
	runSince  time.Time
	bootTimer Timer
	agentUp   bool
	agent     GuestAgent // this instance's guest agent, if it has the channel
	agentErr  error      // why building it failed

	// Graceful shutdown requested: the guest powers off after running
	// shutdownLeft more.
	shutdownPending bool
	shutdownLeft    time.Duration
	shutdownTimer   Timer
	stopped         chan struct{} // closed when the instance stops

	trackers  []*tracker // dirty-rate calculations in progress
	dirtyRate hypervisor.Measured[uint64]

	job      *job      // outgoing migration
	incoming *incoming // this is the target of a migration

	// display is the VNC display of this run, made for its first viewer
	// or brought by a live migration; nil while stopped.
	display *display
}

func (d *domain) name() string { return d.config.name }
func (d *domain) uuid() string { return d.config.uuid }

func (d *domain) spec() *spec {
	if d.state.IsActive() && d.live != nil {
		return d.live
	}
	return d.config
}

func (d *domain) running() bool { return d.state == hypervisor.StateRunning }

// advance integrates the domain's counters and memory from d.updated to
// now in steps of at most stepSize, on a grid aligned to stepSize so the
// result does not depend on how often it is called.
func (d *domain) advance(h *Host, now time.Time) {
	for d.updated.Before(now) {
		next := now
		if d.needsSteps() {
			if grid := d.updated.Truncate(stepSize).Add(stepSize); grid.Before(now) {
				next = grid
			}
		}
		d.step(h, d.updated, next.Sub(d.updated))
		d.updated = next
	}
}

func (d *domain) needsSteps() bool {
	return d.job != nil || len(d.trackers) > 0 || d.model.w.Shape == ShapeBursty && d.running()
}

const stepSize = 10 * time.Millisecond

// step integrates [t, t+dt).
func (d *domain) step(h *Host, t time.Time, dt time.Duration) {
	if d.running() {
		sp := d.spec()
		usage := d.workload.CPUUsage
		if usage == 0 {
			usage = 0.05
		}
		secs := dt.Seconds()
		d.cpu += float64(sp.vcpus) * usage * (1 - d.throttle) * float64(dt)
		net := float64(d.workload.NetRate)
		if net == 0 {
			net = 1000
		}
		blk := float64(d.workload.DiskRate)
		if blk == 0 {
			blk = 4096
		}
		d.netBytes += net * secs
		d.blkBytes += blk * secs
		d.faults += 1000 * secs * float64(sp.vcpus) * usage
		for _, tr := range d.trackers {
			tr.step(&d.model, t, dt, d.throttle)
		}
	}
	if d.job != nil {
		d.job.step(h, d, t, dt)
	}
}
