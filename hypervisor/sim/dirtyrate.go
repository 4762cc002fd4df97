package sim

import (
	"context"
	"slices"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// MeasureDirtyRate measures, from the memory model, the unique bytes the
// guest dirties per second over period (rounded up to 10 ms) on the host's
// clock, like libvirt's page sampling. On a [VirtualClock] it returns once
// the clock has been advanced by period from another goroutine; a loop that
// drives the clock itself uses [Host.StartDirtyRateCalc] instead.
func (h *Host) MeasureDirtyRate(ctx context.Context, name string, period time.Duration) (hypervisor.DirtyRate, error) {
	calc, err := h.StartDirtyRateCalc(ctx, name, period)
	if err != nil {
		return hypervisor.DirtyRate{}, err
	}
	rate, err := calc.Result(ctx)
	if err != nil && ctx.Err() != nil {
		calc.cancel()
	}
	return rate, err
}

// DirtyRateCalc is a dirty-rate calculation in progress (libvirt's
// virDomainStartDirtyRateCalc). It completes by itself when its period has
// passed on the host's clock, also updating the domain's Stats.DirtyRate.
type DirtyRateCalc struct {
	h      *Host
	d      *domain
	gen    uint64
	tr     *tracker
	timer  Timer
	done   chan struct{}
	result hypervisor.DirtyRate
	err    error
}

// StartDirtyRateCalc starts measuring now and returns at once; the result
// is in once the clock has moved by period (rounded up to 10 ms).
func (h *Host) StartDirtyRateCalc(ctx context.Context, name string, period time.Duration) (*DirtyRateCalc, error) {
	const op = "dirty rate"
	period = max(stepSize, (period+stepSize-1)/stepSize*stepSize)
	c := &DirtyRateCalc{h: h, done: make(chan struct{})}
	err := h.do(ctx, func(now time.Time) error {
		d, err := h.lookup(op, name)
		if err != nil {
			return err
		}
		if !d.state.IsActive() {
			return invalidState(op, name, "domain is not running")
		}
		if d.job != nil && h.opts.LibvirtFace {
			return hypervisor.WrapDomain(op, name, hypervisor.NotSupportedError("dirty-rate calculation during a migration", "it would contend with the job's dirty tracking; read the job's dirty rate"))
		}
		c.d, c.gen = d, d.gen
		c.tr = newTracker(&d.model, now)
		d.trackers = append(d.trackers, c.tr)
		c.timer = h.clock.AfterFunc(period, c.finish)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (c *DirtyRateCalc) finish() {
	_ = c.h.do(context.Background(), func(now time.Time) error {
		d := c.d
		select {
		case <-c.done:
			return nil
		default:
		}
		defer close(c.done)
		if c.h.domains[d.name()] != d || d.gen != c.gen {
			c.err = invalidState("dirty rate", d.name(), "domain stopped during the measurement")
			return nil
		}
		d.trackers = slices.DeleteFunc(d.trackers, func(t *tracker) bool { return t == c.tr })
		elapsed := now.Sub(c.tr.since)
		bps := uint64(c.tr.total(&d.model) / elapsed.Seconds())
		c.result = hypervisor.DirtyRate{BytesPerSecond: bps, Period: elapsed, MeasuredAt: now, Method: "model"}
		d.dirtyRate = hypervisor.Some(bps)
		return nil
	})
}

// cancel drops an unfinished calculation.
func (c *DirtyRateCalc) cancel() {
	c.timer.Stop()
	_ = c.h.do(context.Background(), func(now time.Time) error {
		c.d.trackers = slices.DeleteFunc(c.d.trackers, func(t *tracker) bool { return t == c.tr })
		return nil
	})
}

// Done is closed when the calculation has completed.
func (c *DirtyRateCalc) Done() <-chan struct{} { return c.done }

// Result waits for the calculation and returns it.
func (c *DirtyRateCalc) Result(ctx context.Context) (hypervisor.DirtyRate, error) {
	select {
	case <-c.done:
		return c.result, c.err
	case <-ctx.Done():
		return hypervisor.DirtyRate{}, hypervisor.WrapDomain("dirty rate", c.d.name(), ctx.Err())
	}
}
