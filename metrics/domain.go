package metrics

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/store"
)

// NodeSource is one host as the [DomainCollector] reads it.
type NodeSource struct {
	// Name is the node name: VMIs with status.nodeName equal to it are
	// read from Domains.
	Name string
	// Domains returns domain statistics (the node's hypervisor); required.
	Domains DomainStatser
	// Guest supplies guest-agent filesystems; nil gives no
	// kubevirt_vmi_filesystem_* series.
	Guest FilesystemLister
	// Migrations lists the node's outgoing migrations; nil gives no
	// migration-job or engine series.
	Migrations MigrationSource
}

// DomainSources are what the [DomainCollector] reads.
type DomainSources struct {
	// Objects lists the VMIs (for their node, phase and labels); required.
	Objects ObjectLister
	// Nodes are the hosts to read domain statistics from.
	Nodes []NodeSource
	// LabelSelector, when set, restricts the VMI listing, so a per-node
	// endpoint need not copy the whole cluster's VMIs on every scrape
	// ([RegisterNode] selects kubevirt.io/nodeName=<node>, the label the
	// node agent itself watches). VMIs are still matched to nodes by
	// status.nodeName.
	LabelSelector labels.Selector
	// VMIs, when set, is read instead of listing Objects once it has a
	// view ([VMIIndex]: a scrape then copies no VMI). It must hold the VMIs
	// LabelSelector selects.
	VMIs VMIRanger
}

// DomainCollector exports per-VMI domain statistics and running
// migrations' counters, like KubeVirt's virt-handler. It is safe for
// concurrent scrapes; each scrape reads fresh statistics.
type DomainCollector struct {
	objects ObjectLister
	nodes   map[string]*nodeState
	order   []*nodeState
	opts    Options
	log     *slog.Logger
	f       *domainFamilies
	descs   descCache
	devices deviceCache

	listErrors   atomic.Uint64
	listErrorsFm *family
	selector     labels.Selector
	vmis         VMIRanger

	// prefixes are the VMIs' escaped label sets for WriteText; streams
	// keep the text buffers of past scrapes.
	prefixes prefixCache
	streams  sync.Pool
}

type nodeState struct {
	src      NodeSource
	timeouts atomic.Uint64
	errors   atomic.Uint64

	// machines are the host's machine types, read once.
	machinesMu   sync.Mutex
	machines     []hypervisor.MachineType
	haveMachines bool
}

// machineTypes returns the node's machine types, reading them on the
// first call that succeeds; false when the hypervisor does not report
// them or has not answered yet.
func (n *nodeState) machineTypes(ctx context.Context) ([]hypervisor.MachineType, bool) {
	l, ok := n.src.Domains.(hypervisor.MachineTypeLister)
	if !ok {
		return nil, false
	}
	n.machinesMu.Lock()
	defer n.machinesMu.Unlock()
	if !n.haveMachines {
		ms, err := l.MachineTypes(ctx)
		if err != nil {
			return nil, false
		}
		n.machines, n.haveMachines = ms, true
	}
	return n.machines, true
}

var _ prometheus.Collector = (*DomainCollector)(nil)

// NewDomainCollector checks the sources and returns a collector to
// register. Nothing is read until the first scrape.
func NewDomainCollector(src DomainSources, opts Options) (*DomainCollector, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if src.Objects == nil {
		return nil, fmt.Errorf("%w: DomainSources.Objects: required", errInvalidOptions)
	}
	c := &DomainCollector{
		objects:      src.Objects,
		nodes:        make(map[string]*nodeState, len(src.Nodes)),
		opts:         opts,
		log:          opts.Logger,
		f:            newDomainFamilies(),
		listErrorsFm: listErrorsFamily(),
	}
	for i, n := range src.Nodes {
		switch {
		case n.Name == "":
			return nil, fmt.Errorf("%w: DomainSources.Nodes[%d].Name: required", errInvalidOptions, i)
		case n.Domains == nil:
			return nil, fmt.Errorf("%w: DomainSources.Nodes[%d].Domains: required", errInvalidOptions, i)
		case c.nodes[n.Name] != nil:
			return nil, fmt.Errorf("%w: DomainSources.Nodes[%d].Name: duplicate node %q", errInvalidOptions, i, n.Name)
		}
		ns := &nodeState{src: n}
		c.nodes[n.Name] = ns
		c.order = append(c.order, ns)
	}
	c.selector, c.vmis = src.LabelSelector, src.VMIs
	return c, nil
}

func listErrorsFamily() *family {
	return newFamily("virtkit_scrape_list_errors_total",
		"Scrapes that could not list objects from the store, by collector.", counter, "collector")
}

// Describe sends nothing: the label set of per-VMI series follows each
// VMI's labels, so the collector is unchecked.
func (c *DomainCollector) Describe(chan<- *prometheus.Desc) {}

// domainTask is one domain's statistics fetch.
type domainTask struct {
	vmi   *virtkit.VirtualMachineInstance
	node  *nodeState
	stats hypervisor.DomainStats
	err   error
	// names are the domain's device names (nil: none known, labels keep
	// the host-side names).
	names *deviceNames
}

// jobTask is one migration job's statistics fetch.
type jobTask struct {
	node      *nodeState
	mig       Migration
	namespace string
	name      string
	stats     hypervisor.JobStats
	err       error
}

// Collect reads every VMI's domain on the configured nodes, within
// Options.ScrapeTimeout.
func (c *DomainCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.ScrapeTimeout)
	defer cancel()
	c.collect(ctx, &emitter{ch: ch, descs: &c.descs, log: c.log})
	for _, n := range c.order {
		send(ch, c.f.timeouts, float64(n.timeouts.Load()), n.src.Name)
		send(ch, c.f.errors, float64(n.errors.Load()), n.src.Name)
	}
	send(ch, c.listErrorsFm, float64(c.listErrors.Load()), "domain")
}

// WriteText writes the same series as Collect in the text format, for
// [NewHandler]: each VMI's escaped label set comes from a cache keyed by
// its UID and resourceVersion, VMIs are written in namespace/name order
// and no client_golang metric is built. Do not also register c in a
// registry whose families the same page serves.
func (c *DomainCollector) WriteText(ctx context.Context, w io.Writer) error {
	ts := c.textStream(ctx)
	defer c.release(ts)
	return ts.writeTo(w, nil)
}

// release keeps a written stream's buffers for a later scrape.
func (c *DomainCollector) release(ts *textStream) {
	ts.reset()
	c.streams.Put(ts)
}

// textStream collects one scrape in the text format.
func (c *DomainCollector) textStream(ctx context.Context) *textStream {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ScrapeTimeout)
	defer cancel()
	ts, _ := c.streams.Get().(*textStream)
	if ts == nil {
		ts = newTextStream()
	}
	c.collect(ctx, &emitter{text: ts, log: c.log})
	for _, n := range c.order {
		ts.plain(c.f.timeouts, float64(n.timeouts.Load()), n.src.Name)
		ts.plain(c.f.errors, float64(n.errors.Load()), n.src.Name)
	}
	ts.plain(c.listErrorsFm, float64(c.listErrors.Load()), "domain")
	return ts
}

func (c *DomainCollector) collect(ctx context.Context, e *emitter) {
	if len(c.order) == 0 {
		return
	}
	var tasks []domainTask
	live := map[deviceKey]bool{}
	add := func(vmi *virtkit.VirtualMachineInstance) bool {
		n := c.nodes[vmi.Status.NodeName]
		if n == nil || (vmi.Status.Phase != virtkit.Running && vmi.Status.Phase != virtkit.Scheduled) {
			return true
		}
		tasks = append(tasks, domainTask{vmi: vmi, node: n})
		live[deviceKey{n.src.Name, vmi.UID}] = true
		return true
	}
	// The ranger visits shared objects in key order; a listing is a copy
	// in whatever order the lister returns.
	inOrder := c.vmis != nil && c.vmis.RangeVMIs(add)
	if !inOrder {
		var list virtkit.VirtualMachineInstanceList
		if err := c.objects.List(ctx, &list, store.ListOptions{LabelSelector: c.selector}); err != nil {
			c.listErrors.Add(1)
			c.log.Warn("metrics: listing VMIs", "error", err)
			return
		}
		for i := range list.Items {
			add(&list.Items[i])
		}
	}
	if e.text != nil {
		if !inOrder {
			slices.SortFunc(tasks, func(a, b domainTask) int {
				return cmp.Or(strings.Compare(a.vmi.Namespace, b.vmi.Namespace), strings.Compare(a.vmi.Name, b.vmi.Name))
			})
		}
		defer c.prefixes.endScrape()
	}
	defer c.devices.keep(live)
	var jobs []jobTask
	for _, n := range c.order {
		if n.src.Migrations == nil {
			continue
		}
		for _, m := range n.src.Migrations.Migrations() {
			ns, name, ok := SplitDomainName(m.Domain)
			if !ok {
				c.log.Warn("metrics: migration of a domain that is no VMI's", "node", n.src.Name, "domain", m.Domain)
				continue
			}
			jobs = append(jobs, jobTask{node: n, mig: m, namespace: ns, name: name})
		}
	}

	mems := c.nodeMemoryTasks()

	// One pool for every kind of hypervisor call: indices past the
	// domains are jobs, then node memory.
	done := runBounded(ctx, len(tasks)+len(jobs)+len(mems), c.opts.MaxConcurrency, func(ctx context.Context, i int) {
		if i >= len(tasks)+len(jobs) {
			m := &mems[i-len(tasks)-len(jobs)]
			m.mem, m.err = m.r.NodeMemory(ctx)
			return
		}
		if i < len(tasks) {
			t := &tasks[i]
			dom := DomainName(t.vmi.Namespace, t.vmi.Name)
			t.stats, t.err = t.node.src.Domains.Stats(ctx, dom)
			if t.err == nil {
				t.names = c.deviceNames(ctx, t.node, t.vmi, dom, &t.stats)
			}
			return
		}
		j := &jobs[i-len(tasks)]
		if j.mig.Job != nil {
			j.stats, j.err = j.mig.Job.Stats(ctx)
		}
	})

	for i := range tasks {
		t := &tasks[i]
		// An abandoned task may still be writing its slot: read it only
		// when done.
		if !done[i] {
			c.timedOut(t.node, t.vmi.Namespace, t.vmi.Name)
			continue
		}
		if !c.account(t.node, t.err, t.vmi.Namespace, t.vmi.Name) {
			continue
		}
		if e.text != nil {
			e.prefix = c.prefixes.get(t.vmi, t.node.src.Name)
		} else {
			vl := labelsOf(t.vmi.Labels)
			e.reset(&vl, t.node.src.Name, t.vmi.Namespace, t.vmi.Name)
		}
		c.emitDomain(e, &t.stats, t.names)
		if t.node.src.Guest != nil {
			if fss, err := t.node.src.Guest.FilesystemList(t.vmi.Namespace, t.vmi.Name); err == nil {
				c.emitFilesystems(e, fss)
			}
		}
	}
	c.emitNodes(ctx, e, tasks, done)
	c.emitNodeMemory(e, mems, done[len(tasks)+len(jobs):])
	noLabels := vmiLabels{}
	for i := range jobs {
		j := &jobs[i]
		e.reset(&noLabels, j.node.src.Name, j.namespace, j.name)
		switch {
		case j.mig.Job == nil:
		case !done[len(tasks)+i]:
			c.timedOut(j.node, j.namespace, j.name)
		case c.account(j.node, j.err, j.namespace, j.name):
			c.emitJob(e, &j.stats)
		}
		if j.mig.Engine != nil {
			emitEngineSnapshot(e, &c.f.engine, j.mig.Engine)
		}
	}
	c.emitFinishedMigrations(ctx, e, jobs)
}

// account counts a finished fetch that ran out of time or failed, and
// reports whether its result is usable. A domain that is gone is no error: the
// VMI's status simply lags the host.
func (c *DomainCollector) account(n *nodeState, err error, namespace, name string) bool {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		c.timedOut(n, namespace, name)
		return false
	case errors.Is(err, hypervisor.ErrNotFound):
		return false
	case err != nil:
		n.errors.Add(1)
		c.log.Warn("metrics: reading statistics", "node", n.src.Name, "namespace", namespace, "name", name, "error", err)
		return false
	}
	return true
}

func (c *DomainCollector) timedOut(n *nodeState, namespace, name string) {
	n.timeouts.Add(1)
	c.log.Warn("metrics: statistics missed the scrape deadline", "node", n.src.Name, "namespace", namespace, "name", name)
}

// vcpuState maps the backend's vCPU state to KubeVirt's label values.
func vcpuState(s string) string {
	switch s {
	case "running", "offline", "blocked":
		return s
	}
	return "unknown"
}

// deviceNames returns the domain's device names, reading its XML when the
// cache has none for this VMI or lacks a device the statistics show. Any
// failure leaves the host-side names in place.
func (c *DomainCollector) deviceNames(ctx context.Context, n *nodeState, vmi *virtkit.VirtualMachineInstance, dom string, st *hypervisor.DomainStats) *deviceNames {
	xmler, ok := n.src.Domains.(DomainXMLer)
	if !ok {
		return nil
	}
	key := deviceKey{n.src.Name, vmi.UID}
	nics := make([]string, len(st.Net))
	for i := range st.Net {
		nics[i] = st.Net[i].Name
	}
	disks := make([]string, len(st.Block))
	for i := range st.Block {
		disks[i] = st.Block[i].Name
	}
	if d := c.devices.get(key); d != nil && d.covers(nics, disks) {
		return d
	}
	x, err := xmler.XML(ctx, dom)
	if err != nil {
		c.log.Debug("metrics: reading domain XML for device names", "node", n.src.Name, "domain", dom, "error", err)
		return nil
	}
	d, err := parseDeviceNames(x)
	if err != nil {
		c.log.Warn("metrics: parsing domain XML for device names", "node", n.src.Name, "domain", dom, "error", err)
		return nil
	}
	// vCPU pinning changes with the domain's definition, like its
	// devices: read with them, once per incarnation.
	if ar, ok := n.src.Domains.(hypervisor.VCPUAffinityReader); ok {
		if m, err := ar.VCPUAffinity(ctx, dom); err == nil {
			for _, v := range m {
				for _, on := range v {
					if on {
						d.affinity++
					}
				}
			}
			d.haveAffinity = true
		}
	}
	// Devices the XML does not list keep their names; recording them
	// stops a re-read on every scrape.
	for _, n := range nics {
		if _, ok := d.nics[n]; !ok {
			d.nics[n] = n
		}
	}
	for _, n := range disks {
		if _, ok := d.disks[n]; !ok {
			d.disks[n] = n
		}
	}
	c.devices.put(key, d)
	return d
}

func (c *DomainCollector) emitDomain(e *emitter, st *hypervisor.DomainStats, names *deviceNames) {
	if names == nil {
		names = &deviceNames{}
	}
	f := c.f
	e.duration(f.cpuUsage, st.CPUTime)
	e.duration(f.cpuUser, st.CPUUser)
	e.duration(f.cpuSystem, st.CPUSystem)
	for _, v := range st.VCPUs {
		id := strconv.Itoa(v.ID)
		e.duration(f.vcpuSeconds, v.Time, id, vcpuState(v.State))
		e.duration(f.vcpuWait, v.Wait, id)
		e.duration(f.vcpuDelay, v.Delay, id)
	}
	m := &st.Memory
	e.uint(f.memResident, m.RSS)
	e.uint(f.memAvailable, m.Available)
	e.uint(f.memUnused, m.Unused)
	e.uint(f.memCached, m.DiskCaches)
	e.uint(f.memSwapIn, m.SwapIn)
	e.uint(f.memSwapOut, m.SwapOut)
	e.uint(f.memMajFault, m.MajorFaults)
	e.uint(f.memMinFault, m.MinorFaults)
	e.uint(f.memBalloon, m.Actual)
	e.uint(f.memUsable, m.Usable)
	e.uint(f.memDomain, m.BalloonCurrent)
	for i := range st.Net {
		n := &st.Net[i]
		iface := names.nic(n.Name)
		e.uint(f.netRxBytes, n.RxBytes, iface)
		e.uint(f.netTxBytes, n.TxBytes, iface)
		e.uint(f.netRxPackets, n.RxPackets, iface)
		e.uint(f.netTxPackets, n.TxPackets, iface)
		e.uint(f.netRxErrors, n.RxErrors, iface)
		e.uint(f.netTxErrors, n.TxErrors, iface)
		e.uint(f.netRxDropped, n.RxDropped, iface)
		e.uint(f.netTxDropped, n.TxDropped, iface)
		e.uint(f.netTraffic, n.RxBytes, iface, "rx")
		e.uint(f.netTraffic, n.TxBytes, iface, "tx")
	}
	for i := range st.Block {
		b := &st.Block[i]
		drive := names.disk(b.Name)
		e.uint(f.stIopsRead, b.ReadReqs, drive)
		e.uint(f.stIopsWrite, b.WriteReqs, drive)
		e.uint(f.stReadBytes, b.ReadBytes, drive)
		e.uint(f.stWriteBytes, b.WriteBytes, drive)
		e.duration(f.stReadTimes, b.ReadTime, drive)
		e.duration(f.stWriteTimes, b.WriteTime, drive)
		e.uint(f.stFlushReqs, b.FlushReqs, drive)
		e.duration(f.stFlushTimes, b.FlushTime, drive)
	}
	e.uint(f.dirtyRate, st.DirtyRate)
	if names.haveAffinity {
		e.value(f.cpuAffinity, float64(names.affinity))
	}
}

// emitFilesystems writes the guest's filesystems. The guest agent source
// reports an unknown size as 0, so a filesystem without a capacity is
// left out rather than shown as empty.
func (c *DomainCollector) emitFilesystems(e *emitter, fss []GuestFilesystem) {
	for _, fs := range fss {
		if fs.TotalBytes <= 0 || fs.UsedBytes < 0 {
			continue
		}
		e.value(c.f.fsCapacity, float64(fs.TotalBytes), fs.DiskName, fs.MountPoint, fs.FileSystemType)
		e.value(c.f.fsUsed, float64(fs.UsedBytes), fs.DiskName, fs.MountPoint, fs.FileSystemType)
	}
}

func (c *DomainCollector) emitJob(e *emitter, js *hypervisor.JobStats) {
	if js.Type != hypervisor.JobUnbounded {
		// Only a running job has meaningful progress counters.
		return
	}
	e.uint(c.f.migDataTotal, js.DataTotal)
	e.uint(c.f.migDataRemaining, js.DataRemaining)
	e.uint(c.f.migDataProcessed, js.DataProcessed)
	e.uint(c.f.migDirtyRate, js.MemoryDirtyRate)
	e.uint(c.f.migTransferRate, js.MemoryBps)
	if js.Mode == hypervisor.ModePostCopy {
		e.uint(c.f.migPostCopyFaults, js.PostcopyRequests)
	}
}

// emitEngineSnapshot writes virtkit_migration_* from a live engine.
func emitEngineSnapshot(e *emitter, f *engineFamilies, src EngineSnapshotter) {
	s := src.Snapshot()
	if p := s.Prediction; p != nil && p.Converges {
		e.value(f.predictedTotal, p.Total.Seconds())
		e.value(f.predictedDowntime, p.Downtime.Seconds())
	}
	if s.Strategy != "" {
		e.value(f.strategy, 1, s.Strategy)
	}
	e.value(f.throttle, float64(s.Throttle)/100)
	dirty := s.DirtyRate
	if !dirty.Valid {
		dirty = s.DirtyRateBefore
	}
	if v, ok := dirty.Get(); ok {
		e.value(f.dirtyRate, v)
	}
	if v, ok := s.Bandwidth.Get(); ok {
		e.value(f.bandwidth, v)
	}
	if s.DowntimeLimit > 0 {
		e.value(f.downtimeLimit, s.DowntimeLimit.Seconds())
	}
	counts := map[string]int{}
	var order []string
	for _, d := range s.Decisions {
		k := string(d.Action.Kind)
		if counts[k] == 0 {
			order = append(order, k)
		}
		counts[k]++
	}
	for _, k := range order {
		e.value(f.decisions, float64(counts[k]), k)
	}
}

func (e *emitter) uint(f *family, m hypervisor.Measured[uint64], extra ...string) {
	if v, ok := m.Get(); ok {
		e.value(f, float64(v), extra...)
	}
}

func (e *emitter) duration(f *family, m hypervisor.Measured[time.Duration], extra ...string) {
	if v, ok := m.Get(); ok {
		e.value(f, v.Seconds(), extra...)
	}
}
