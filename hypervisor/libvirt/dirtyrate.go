//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"context"
	"fmt"
	"time"

	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
)

// dirtyRatePoll is how often MeasureDirtyRate asks whether the result is in
// once the sampling period has passed.
const dirtyRatePoll = 100 * time.Millisecond

// maxDirtyRatePeriod is QEMU's limit on calc-dirty-rate's calc-time.
const maxDirtyRatePeriod = 60 * time.Second

// MeasureDirtyRate runs QEMU's page-sampling dirty-rate calculation for
// period (rounded up to whole seconds, 1 to 60) and waits for its result.
// Page sampling hashes a sample of guest pages, so only changed content
// counts; the dirty-bitmap and dirty-ring modes crash QEMU 7.2 under TCG
// and are not used.
func (h *Hypervisor) MeasureDirtyRate(ctx context.Context, name string, period time.Duration) (hypervisor.DirtyRate, error) {
	if period <= 0 || period > maxDirtyRatePeriod {
		return hypervisor.DirtyRate{}, hypervisor.WrapDomain("measure dirty rate", name,
			fmt.Errorf("period %v: must be in (0, %v]: %w", period, maxDirtyRatePeriod, hypervisor.ErrInvalidArgument))
	}
	secs := int((period + time.Second - 1) / time.Second)

	prev, err := h.dirtyRateStats(ctx, name)
	if err != nil {
		return hypervisor.DirtyRate{}, err
	}
	err = doDomain(ctx, h, "measure dirty rate", name, func(d *lv.Domain) error {
		// libvirt answers "not running" itself, but only after probing
		// QEMU; a shut-off domain gets the sentinel directly.
		return d.StartDirtyRateCalc(secs, lv.DOMAIN_DIRTYRATE_MODE_PAGE_SAMPLING)
	})
	if err != nil {
		return hypervisor.DirtyRate{}, err
	}
	wait := time.Duration(secs) * time.Second
	for {
		select {
		case <-ctx.Done():
			return hypervisor.DirtyRate{}, hypervisor.WrapDomain("measure dirty rate", name, ctx.Err())
		case <-time.After(wait):
		}
		wait = dirtyRatePoll
		cur, err := h.dirtyRateStats(ctx, name)
		if err != nil {
			return hypervisor.DirtyRate{}, err
		}
		// A new result: measured, and started after the previous one
		// (QEMU reports the start in whole seconds; a calculation lasts
		// at least one).
		if cur.status == lv.DOMAIN_DIRTYRATE_MEASURED && cur.mibPerSec >= 0 &&
			(!prev.valid || cur.start > prev.start) {
			p := time.Duration(cur.period) * time.Second
			if p <= 0 {
				p = time.Duration(secs) * time.Second
			}
			return hypervisor.DirtyRate{
				BytesPerSecond: uint64(cur.mibPerSec) << 20,
				Period:         p,
				MeasuredAt:     time.Now(),
				Method:         "page-sampling",
			}, nil
		}
	}
}

type dirtyRateSample struct {
	valid     bool // a calculation was reported at all
	status    lv.DomainDirtyRateStatus
	start     int64
	period    int
	mibPerSec int64
}

func (h *Hypervisor) dirtyRateStats(ctx context.Context, name string) (dirtyRateSample, error) {
	return withDomain(ctx, h, "measure dirty rate", name, func(c *lv.Connect, d *lv.Domain) (dirtyRateSample, error) {
		state, _, err := d.GetState()
		if err != nil {
			return dirtyRateSample{}, err
		}
		if state != lv.DOMAIN_RUNNING && state != lv.DOMAIN_PAUSED && state != lv.DOMAIN_BLOCKED {
			return dirtyRateSample{}, fmt.Errorf("domain is not running: %w", hypervisor.ErrInvalidState)
		}
		recs, err := c.GetAllDomainStats([]*lv.Domain{d}, lv.DOMAIN_STATS_DIRTYRATE, 0)
		if err != nil {
			return dirtyRateSample{}, err
		}
		var s dirtyRateSample
		for _, r := range recs {
			if r.Domain != nil {
				freeDomain(h.log, r.Domain)
			}
			dr := r.DirtyRate
			if dr == nil || !dr.CalcStatusSet {
				continue
			}
			s = dirtyRateSample{
				valid:     dr.CalcStartTimeSet && lv.DomainDirtyRateStatus(dr.CalcStatus) != lv.DOMAIN_DIRTYRATE_UNSTARTED,
				status:    lv.DomainDirtyRateStatus(dr.CalcStatus),
				start:     dr.CalcStartTime,
				period:    dr.CalcPeriod,
				mibPerSec: dr.MegabytesPerSecond,
			}
			if !dr.MegabytesPerSecondSet {
				s.mibPerSec = -1
			}
		}
		return s, nil
	})
}
