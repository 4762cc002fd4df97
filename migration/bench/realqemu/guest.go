package realqemu

import (
	"fmt"
	"math"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit/hypervisor/sim"
	"github.com/virtkit/virtkit/migration/bench"
)

const (
	mib = 1 << 20
	// MinMemoryMiB and MaxMemoryMiB bound the guest: the cloud kernel needs
	// about 80 MiB; larger guests cost too much under TCG.
	MinMemoryMiB = 128
	MaxMemoryMiB = 1024
	// KernelReserveMiB is guest memory the dirtier's working set must leave
	// to the kernel and the initramfs (a 128 MiB guest has about 57 MiB
	// free; a larger working set gets the dirtier killed by the OOM killer).
	KernelReserveMiB = 88
)

// Guest is a profile as the tiny guest realises it.
type Guest struct {
	// Kind is GuestTiny or GuestDebian.
	Kind      string
	MemoryMiB int
	// DirtyMiBPerSec and DirtyMiB are the dirtier's rate and working set;
	// 0 rate = an idle guest.
	DirtyMiBPerSec int
	DirtyMiB       int
	// HangSeconds is, on the Debian guest, stress-ng's pause after each
	// pass over its working set (0 = none: flat out).
	HangSeconds int
	// Bandwidth is the migration speed cap in bytes/s (whole MiB/s).
	Bandwidth uint64
}

// Realise maps profile i onto the tiny guest, or explains with field paths
// (profiles[i].shape ...) what the real guest cannot do.
func Realise(i int, p bench.Profile) (Guest, field.ErrorList) {
	path := field.NewPath("profiles").Index(i)
	g := Guest{Kind: GuestTiny}
	errs := realiseMemory(path, p, &g, guestLimits{
		what: "the real guest", minMiB: MinMemoryMiB, maxMiB: MaxMemoryMiB,
		reserveMiB: KernelReserveMiB, reserveFor: "its kernel",
		minWorkingSetMiB: 1, minWorkingSetWhy: "the real guest's dirtier takes at least 1Mi",
	})
	errs = append(errs, realiseCommon(path, p, &g)...)
	return g, errs
}

// guestLimits are what one kind of real guest can realise of a profile's
// memory and working set.
type guestLimits struct {
	what             string // "the real guest"
	minMiB, maxMiB   int
	reserveMiB       int    // kept for the guest's own use
	reserveFor       string // "its kernel"
	minWorkingSetMiB int64
	minWorkingSetWhy string
}

// realiseMemory sets g's memory, dirty rate and working set from p within
// l, or explains with field paths what the guest cannot do.
func realiseMemory(path *field.Path, p bench.Profile, g *Guest, l guestLimits) field.ErrorList {
	var errs field.ErrorList
	mem := p.MemoryBytes()
	if mem%mib != 0 || mem/mib < uint64(l.minMiB) || mem/mib > uint64(l.maxMiB) {
		errs = append(errs, field.Invalid(path.Child("memory"), p.Memory.String(),
			fmt.Sprintf("%s takes whole MiB from %dMi to %dMi", l.what, l.minMiB, l.maxMiB)))
	} else {
		g.MemoryMiB = int(mem / mib)
	}
	rate := p.DirtyRate.Value()
	if rate <= 0 {
		return errs
	}
	g.DirtyMiBPerSec = max(1, int(math.Round(float64(rate)/mib)))
	free := g.MemoryMiB - l.reserveMiB
	switch {
	case p.WorkingSet == nil:
		g.DirtyMiB = free
	case p.WorkingSet.Value() < l.minWorkingSetMiB*mib:
		errs = append(errs, field.Invalid(path.Child("workingSet"), p.WorkingSet.String(), l.minWorkingSetWhy))
	default:
		g.DirtyMiB = int(p.WorkingSet.Value() / mib)
		if g.MemoryMiB > 0 && g.DirtyMiB > free {
			errs = append(errs, field.Invalid(path.Child("workingSet"), p.WorkingSet.String(),
				fmt.Sprintf("%s keeps %dMi for %s: at most %dMi of a %dMi guest", l.what, l.reserveMiB, l.reserveFor, free, g.MemoryMiB)))
		}
	}
	return errs
}

// realiseCommon checks what every real guest shares (shape, knobs no
// real guest realises, bandwidth) and sets g's bandwidth in whole MiB/s.
func realiseCommon(path *field.Path, p bench.Profile, g *Guest) field.ErrorList {
	var errs field.ErrorList
	switch p.Shape {
	case "", sim.ShapeUniform, sim.ShapeSequential:
	default:
		errs = append(errs, field.NotSupported(path.Child("shape"), p.Shape,
			[]string{string(sim.ShapeUniform), string(sim.ShapeSequential)}))
	}
	errs = append(errs, unrealisedKnobs(path, p)...)
	bw := p.BandwidthBytes()
	if bw < mib {
		errs = append(errs, field.Invalid(path.Child("bandwidth"), p.Bandwidth.String(), "libvirt caps migrations in whole MiB/s: at least 1Mi"))
	} else {
		g.Bandwidth = uint64(math.Ceil(bw/mib)) * mib
	}
	return errs
}

// unrealisedKnobs are the profile's knobs no real guest realises.
func unrealisedKnobs(path *field.Path, p bench.Profile) field.ErrorList {
	var errs field.ErrorList
	if len(p.Dips) > 0 {
		errs = append(errs, field.Forbidden(path.Child("dips"), "bandwidth dips are not realised on the real guest"))
	}
	if s := p.ThrottleSensitivity; s != nil && *s != 1 {
		errs = append(errs, field.Invalid(path.Child("throttleSensitivity"), *s,
			"the real guest's dirtier runs on its vCPU: only 1 is realised"))
	}
	if p.BurstSet != nil || p.BurstPeriod != 0 || p.BurstFactor != 0 || p.BurstDuration != 0 {
		errs = append(errs, field.Forbidden(path.Child("burstPeriod"), "bursts are not realised on the real guest"))
	}
	return errs
}

// KernelArgs is the guest's kernel command line: serial console, quiet
// boot, no reboot on panic, and the dirtier's parameters.
func (g Guest) KernelArgs() string {
	args := "console=ttyS0 quiet panic=-1"
	if g.DirtyMiBPerSec > 0 {
		args += fmt.Sprintf(" dirty_mb_s=%d dirty_mb=%d", g.DirtyMiBPerSec, g.DirtyMiB)
	}
	return args
}

// DomainXML is the guest as a TCG domain booting kernel and initrd
// directly, with the guest-agent channel. Both files must be readable by
// the QEMU user.
func (g Guest) DomainXML(name, kernel, initrd string) string {
	return fmt.Sprintf(`<domain type='qemu'>
  <name>%s</name>
  <memory unit='MiB'>%d</memory>
  <currentMemory unit='MiB'>%d</currentMemory>
  <vcpu>1</vcpu>
  <os>
    <type arch='x86_64' machine='pc'>hvm</type>
    <kernel>%s</kernel>
    <initrd>%s</initrd>
    <cmdline>%s</cmdline>
  </os>
  <features><acpi/></features>
  <clock offset='utc'/>
  <on_poweroff>destroy</on_poweroff>
  <on_reboot>restart</on_reboot>
  <on_crash>destroy</on_crash>
  <devices>
    <channel type='unix'><target type='virtio' name='org.qemu.guest_agent.0'/></channel>
    <memballoon model='none'/>
  </devices>
</domain>`, xmlEscape(name), g.MemoryMiB, g.MemoryMiB, xmlEscape(kernel), xmlEscape(initrd), xmlEscape(g.KernelArgs()))
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "'", "&apos;", `"`, "&quot;").Replace(s)
}

// domainName is a libvirt name for one (profile, policy) run.
func domainName(profile, policy string) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			switch {
			case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
				return r
			case r >= 'A' && r <= 'Z':
				return r + 'a' - 'A'
			}
			return '-'
		}, s)
	}
	n := "vkt-bench-" + clean(profile) + "-" + clean(policy)
	if len(n) > 60 {
		n = n[:60]
	}
	return n
}
