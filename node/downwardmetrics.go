package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/hypervisor"
)

// Downward metrics (volumes[].downwardMetrics): before a domain with the
// volume is defined, the agent creates the VMI's vhostmd disk
// (domain.DownwardMetricsDisk), then rewrites it every
// DownwardMetricsOptions.Interval with the metrics KubeVirt's virt-handler
// publishes: the host's identity, memory, paging and CPU time and the VM's
// vCPUs, CPU time and memory. Each refresh is bounded by the interval; the
// refresher stops, and the disk is removed, with the domain. An agent that
// restarted resumes the refresh of a running domain at its next status
// update.

// DefaultDownwardMetricsInterval is KubeVirt's refresh period.
const DefaultDownwardMetricsInterval = 5 * time.Second

// DownwardMetricsOptions configure the downward metrics refresher.
type DownwardMetricsOptions struct {
	// Interval between refreshes; default DefaultDownwardMetricsInterval.
	Interval time.Duration
	// ProcDir and SysDir are where the host's proc and sys file systems
	// are read; default /proc and /sys.
	ProcDir, SysDir string
	// SystemInfo and Vendor are the HostSystemInfo and
	// VirtualizationVendor metrics; default "linux" and "kubevirt.io", as
	// KubeVirt reports them.
	SystemInfo, Vendor string
}

func (o DownwardMetricsOptions) withDefaults() DownwardMetricsOptions {
	if o.Interval <= 0 {
		o.Interval = DefaultDownwardMetricsInterval
	}
	if o.ProcDir == "" {
		o.ProcDir = "/proc"
	}
	if o.SysDir == "" {
		o.SysDir = "/sys"
	}
	if o.SystemInfo == "" {
		o.SystemInfo = "linux"
	}
	if o.Vendor == "" {
		o.Vendor = "kubevirt.io"
	}
	return o
}

// productVersioner is a hypervisor that names its emulator's version (the
// VirtProductInfo metric); without it the metric reads "qemu-unknown", as
// KubeVirt writes when it cannot tell.
type productVersioner interface {
	ProductVersion(ctx context.Context) (string, error)
}

// downwardRefreshers are the running refreshers, per domain.
type downwardRefreshers struct {
	mu    sync.Mutex
	base  context.Context
	wg    sync.WaitGroup
	byDom map[string]*downwardRefresher
}

type downwardRefresher struct {
	path   string
	cancel context.CancelFunc
	done   chan struct{}
}

// setBase records the agent's lifetime: refreshers end with it.
func (d *downwardRefreshers) setBase(ctx context.Context) {
	d.mu.Lock()
	d.base = ctx
	d.mu.Unlock()
}

// createDownwardMetricsDisk creates vmi's vhostmd disk with the first
// metrics (or an empty document while the domain does not exist yet).
func (a *Agent) createDownwardMetricsDisk(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName string) error {
	if !domain.HasDownwardMetricsVolume(vmi) {
		return nil
	}
	p := domain.DownwardMetricsDisk(vmi, a.opts.Domain)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("downward metrics disk: %w", err)
	}
	return a.writeDownwardMetrics(ctx, p, domName)
}

// downwardTargets are the disk to refresh and the channel socket to serve
// for vmi; either is empty when vmi does not ask for it.
func (a *Agent) downwardTargets(vmi *virtkit.VirtualMachineInstance) (disk, sock string) {
	if domain.HasDownwardMetricsVolume(vmi) {
		disk = domain.DownwardMetricsDisk(vmi, a.opts.Domain)
	}
	if vmi.Spec.Domain.Devices.DownwardMetrics != nil {
		sock = domain.DownwardMetricsSocket(vmi, a.opts.Domain)
	}
	return disk, sock
}

// startDownwardMetrics creates the disk and (re)starts the refresher and
// the channel server.
func (a *Agent) startDownwardMetrics(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName string) error {
	disk, sock := a.downwardTargets(vmi)
	if disk == "" && sock == "" {
		return nil
	}
	if err := a.createDownwardMetricsDisk(ctx, vmi, domName); err != nil {
		return err
	}
	a.runDownwardRefresher(domName, disk, sock, true)
	return nil
}

// ensureDownwardMetrics starts the refresher of a running domain that has
// none (the agent restarted, or the domain arrived by migration).
func (a *Agent) ensureDownwardMetrics(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName string) {
	disk, sock := a.downwardTargets(vmi)
	if disk == "" && sock == "" {
		return
	}
	a.dm.mu.Lock()
	_, running := a.dm.byDom[domName]
	a.dm.mu.Unlock()
	if running {
		return
	}
	if err := a.createDownwardMetricsDisk(ctx, vmi, domName); err != nil {
		a.log.Warn("downward metrics disk", "domain", domName, "err", err)
		return
	}
	a.runDownwardRefresher(domName, disk, sock, false)
}

func (a *Agent) runDownwardRefresher(domName, path, sock string, replace bool) {
	a.dm.mu.Lock()
	defer a.dm.mu.Unlock()
	if old, ok := a.dm.byDom[domName]; ok {
		if !replace {
			return
		}
		old.cancel()
	}
	base := a.dm.base
	if base == nil {
		base = context.Background() // an agent driven without Start (tests)
	}
	ctx, cancel := context.WithCancel(base)
	r := &downwardRefresher{path: path, cancel: cancel, done: make(chan struct{})}
	if a.dm.byDom == nil {
		a.dm.byDom = map[string]*downwardRefresher{}
	}
	a.dm.byDom[domName] = r
	a.dm.wg.Go(func() {
		defer close(r.done)
		var wg sync.WaitGroup
		if path != "" {
			wg.Go(func() { a.refreshDownwardMetrics(ctx, domName, path) })
		}
		if sock != "" {
			wg.Go(func() { a.serveDownwardChannel(ctx, domName, sock) })
		}
		gone := a.watchDomainGone(ctx, domName)
		cancel()
		wg.Wait()
		if gone {
			a.dropDownwardRefresher(domName, r)
		}
	})
}

// goneAfter is how many refresh intervals in a row a domain must be
// missing before its refresher ends by itself (the domain left without
// removeDomain: migrated away, or undefined behind the agent's back).
const goneAfter = 3

// watchDomainGone returns true once domName has been missing for
// goneAfter intervals in a row, false when ctx ends first.
func (a *Agent) watchDomainGone(ctx context.Context, domName string) bool {
	iv := a.opts.DownwardMetrics.withDefaults().Interval
	t := a.opts.Clock.NewTicker(iv)
	defer t.Stop()
	missing := 0
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C():
		}
		ictx, cancel := context.WithTimeout(ctx, iv)
		_, err := a.opts.Hypervisor.Info(ictx, domName)
		cancel()
		switch {
		case errors.Is(err, hypervisor.ErrNotFound):
			missing++
		case err == nil:
			missing = 0
		}
		if missing >= goneAfter {
			a.log.Info("downward metrics: domain gone, refresher stopped", "domain", domName)
			return true
		}
	}
}

// dropDownwardRefresher forgets r (unless replaced since) and removes its
// disk.
func (a *Agent) dropDownwardRefresher(domName string, r *downwardRefresher) {
	a.dm.mu.Lock()
	current := a.dm.byDom[domName] == r
	if current {
		delete(a.dm.byDom, domName)
	}
	a.dm.mu.Unlock()
	if current && r.path != "" { // a replacement owns the disk now
		_ = os.RemoveAll(filepath.Dir(r.path))
	}
}

func (a *Agent) refreshDownwardMetrics(ctx context.Context, domName, path string) {
	iv := a.opts.DownwardMetrics.withDefaults().Interval
	t := a.opts.Clock.NewTicker(iv)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		wctx, cancel := context.WithTimeout(ctx, iv)
		err := a.writeDownwardMetrics(wctx, path, domName)
		cancel()
		if err != nil && ctx.Err() == nil {
			a.log.Debug("downward metrics refresh failed", "domain", domName, "err", err)
		}
	}
}

// stopDownwardMetrics stops a domain's refresher and removes its disk.
func (a *Agent) stopDownwardMetrics(domName string) {
	a.dm.mu.Lock()
	r, ok := a.dm.byDom[domName]
	delete(a.dm.byDom, domName)
	a.dm.mu.Unlock()
	if !ok {
		return
	}
	r.cancel()
	<-r.done
	if r.path == "" {
		return
	}
	if err := os.RemoveAll(filepath.Dir(r.path)); err != nil {
		a.log.Warn("removing downward metrics disk", "path", r.path, "err", err)
	}
}

// writeDownwardMetrics collects the metrics and writes them into the disk
// at path, creating it when missing.
func (a *Agent) writeDownwardMetrics(ctx context.Context, path, domName string) error {
	m := a.collectDownwardMetrics(ctx, domName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if err := domain.WriteVhostmd(f, m); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// collectDownwardMetrics gathers what KubeVirt publishes, in its order;
// what cannot be read is left out, as KubeVirt leaves it out.
func (a *Agent) collectDownwardMetrics(ctx context.Context, domName string) domain.Metrics {
	o := a.opts.DownwardMetrics.withDefaults()
	version := "qemu-unknown"
	if pv, ok := a.opts.Hypervisor.(productVersioner); ok {
		if v, err := pv.ProductVersion(ctx); err == nil && v != "" {
			version = v
		}
	}
	host := domain.MetricContextHost
	ms := []domain.Metric{
		domain.StringMetric(host, "HostName", a.opts.NodeName),
		domain.StringMetric(host, "HostSystemInfo", o.SystemInfo),
		domain.StringMetric(host, "VirtualizationVendor", o.Vendor),
		domain.StringMetric(host, "VirtProductInfo", version),
	}
	ms = append(ms, a.vmDownwardMetrics(ctx, domName)...)
	ms = append(ms, hostDownwardMetrics(o)...)
	ms = append(ms, domain.IntMetric(host, "Time", "s", a.opts.Clock.Now().Unix()))
	return domain.Metrics{Metrics: ms}
}

// vmDownwardMetrics are the VM's CPU time, vCPUs and memory; none while
// the domain does not exist.
func (a *Agent) vmDownwardMetrics(ctx context.Context, domName string) []domain.Metric {
	if domName == "" {
		return nil
	}
	info, err := a.opts.Hypervisor.Info(ctx, domName)
	if err != nil {
		if !errors.Is(err, hypervisor.ErrNotFound) {
			a.log.Debug("downward metrics: domain lookup", "domain", domName, "err", err)
		}
		return nil
	}
	vcpus := uint64(max(info.VCPUs, 0))
	mem := info.MemoryBytes
	cpu := info.CPUTime.Or(0)
	if st, err := a.opts.Hypervisor.Stats(ctx, domName); err == nil {
		var sum time.Duration
		measured := false
		for _, v := range st.VCPUs {
			if t, ok := v.Time.Get(); ok {
				sum, measured = sum+t, true
			}
		}
		if measured {
			cpu = sum
		} else if t, ok := st.CPUTime.Get(); ok {
			cpu = t
		}
		if len(st.VCPUs) > 0 {
			vcpus = uint64(len(st.VCPUs))
		}
		if v, ok := st.Memory.Actual.Get(); ok && v > 0 {
			mem = v
		}
	}
	vm := domain.MetricContextVM
	return []domain.Metric{
		domain.RealMetric(vm, "TotalCPUTime", "s", cpu.Seconds()),
		domain.UintMetric(vm, "ResourceProcessorLimit", "", vcpus),
		domain.UintMetric(vm, "PhysicalMemoryAllocatedToVirtualSystem", "KiB", mem/1024),
		// No active ballooning: the balloon is the memory limit, as KubeVirt reports it.
		domain.UintMetric(vm, "ResourceMemoryLimit", "KiB", mem/1024),
	}
}
