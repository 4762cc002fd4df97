package sim

// Starting a migration: the parameters and the domain are checked, the
// target host is found on the network and the job is armed.

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// StartMigration starts a live migration of a running domain to the host
// named by params.DestinationURI on the same [Network].
func (h *Host) StartMigration(ctx context.Context, name string, params hypervisor.MigrationParams) (hypervisor.MigrationJob, error) {
	const op = "migrate"
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := validateParams(params); err != nil {
		return nil, hypervisor.WrapDomain(op, name, err)
	}
	h.mu.Lock()
	n := h.network
	h.mu.Unlock()

	var sp, sp0 *spec // the destination's and the running definition
	var wl Workload
	var uuid string
	err := h.do(ctx, func(now time.Time) error {
		d, err := h.lookup(op, name)
		if err != nil {
			return err
		}
		if err := migratable(d); err != nil {
			return hypervisor.WrapDomain(op, name, err)
		}
		sp, wl, uuid = d.live, d.workload, d.uuid()
		sp0 = sp
		return nil
	})
	if err != nil {
		return nil, err
	}
	var dst migrationTarget
	var link *linkState
	var w *wire
	addr, remote, err := remoteAddress(params)
	switch {
	case err != nil:
		return nil, hypervisor.WrapDomain(op, name, err)
	case remote:
		if w, err = dialWire(ctx, h, addr, uuid); err != nil {
			return nil, hypervisor.WrapDomain(op, name, err)
		}
		dst, link = w, h.remoteLink(addr)
	case n == nil:
		return nil, hypervisor.WrapDomain(op, name, hypervisor.NotSupportedError("migration",
			"the host is on no sim.Network and the destination is no tcp:// migration listener"))
	default:
		host, l, err := n.route(h, params.DestinationURI)
		if err != nil {
			return nil, hypervisor.WrapDomain(op, name, err)
		}
		dst, link = host, l
	}
	if params.DestinationXML != "" {
		var err error
		if sp, err = parseSpec(params.DestinationXML); err != nil {
			w.close()
			return nil, hypervisor.WrapDomain(op, name, fmt.Errorf("params.destinationXML: %w", err))
		}
		if sp.name != name {
			w.close()
			return nil, hypervisor.WrapDomain(op, name, invalid("params.destinationXML", fmt.Sprintf("names domain %q", sp.name)))
		}
	}

	storage, err := planStorageCopy(params, sp0, sp)
	if err == nil && storage != nil && w != nil {
		err = hypervisor.NotSupportedError("params.copyDisks", "copying disks to a target in another process")
	}
	if err != nil {
		w.close()
		return nil, hypervisor.WrapDomain(op, name, err)
	}
	inc := &incoming{}
	j := &job{
		src: h, dst: dst, link: link, name: name, inc: inc, params: params,
		mode: hypervisor.ModePreCopy, downtimeLimit: params.DowntimeLimit, maxSpeed: params.Bandwidth,
		wire: w, done: make(chan struct{}), storage: storage,
	}
	if j.downtimeLimit == 0 {
		j.downtimeLimit = defaultDowntimeLimit
	}
	if err := dst.receiveStart(j, sp, wl); err != nil {
		w.close()
		return nil, hypervisor.WrapDomain(op, name, err)
	}
	err = h.do(ctx, func(now time.Time) error {
		d, err := h.lookup(op, name)
		if err == nil {
			err = migratable(d)
		}
		if err != nil {
			h.after(func() { dst.receiveEnd(j, false) })
			return hypervisor.WrapDomain(op, name, err)
		}
		if sp.uuid == "" {
			sp.uuid = d.uuid()
		}
		j.d = d
		j.started, j.periodStart, j.windowStart = now, now, now
		j.total = float64(d.live.curMemory)
		j.pending = j.total
		j.iteration = 1
		j.tracker = newTracker(&d.model, now)
		j.bm = newBitmap(&d.model, j.total)
		if z := math.Min(float64(wl.ZeroMemory), j.bm.other); z > 0 {
			// Zero pages stay in the remaining data until the first pass
			// reaches them, and then leave as a header each (QEMU's
			// zero-page detection): they take no bandwidth.
			j.bm.other -= z
			j.zero, j.zeroAtEnd = z, wl.ZeroMemoryAtEnd
		}
		if len(j.bm.region) > 0 {
			j.wsAtEnd = wl.WorkingSetAtEnd
		}
		j.bwEstimate = j.bandwidth(now)
		link.active.Add(1)
		d.job = j
		j.schedule(now)
		h.log.Debug("migration started", "domain", name, "from", h.Name(), "to", dst.targetName())
		return nil
	})
	if err != nil {
		return nil, err
	}
	if h.opts.LibvirtFace {
		// libvirt's jobs have no direct throttle: hide SetThrottle.
		return libvirtJob{j}, nil
	}
	return j, nil
}

func validateParams(p hypervisor.MigrationParams) error {
	switch {
	case p.DestinationURI == "":
		return invalid("params.destinationURI", "required")
	case p.DowntimeLimit < 0:
		return invalid("params.downtimeLimit", "negative")
	case p.AutoConvergeInitial < 0 || p.AutoConvergeInitial > maxThrottle:
		return invalid("params.autoConvergeInitial", fmt.Sprintf("%d is outside 0..%d", p.AutoConvergeInitial, maxThrottle))
	case p.AutoConvergeIncrement < 0 || p.AutoConvergeIncrement > maxThrottle:
		return invalid("params.autoConvergeIncrement", fmt.Sprintf("%d is outside 0..%d", p.AutoConvergeIncrement, maxThrottle))
	case p.ParallelConnections < 0:
		return invalid("params.parallelConnections", "negative")
	}
	return nil
}

func migratable(d *domain) error {
	switch {
	case d.state != hypervisor.StateRunning:
		return fmt.Errorf("domain is %s, not running: %w", d.state, hypervisor.ErrInvalidState)
	case d.job != nil:
		return fmt.Errorf("a migration job is already running: %w", hypervisor.ErrInvalidState)
	case d.incoming != nil:
		return fmt.Errorf("domain is arriving by migration: %w", hypervisor.ErrInvalidState)
	}
	return nil
}
