package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// ControlPlaneSources are what the [ControlPlaneCollector] reads.
type ControlPlaneSources struct {
	// Objects lists VMs, VMIs and migrations; nil exports the controllers
	// only (a node agent's process, whose objects the control plane
	// exports).
	Objects ObjectLister
	// VMIs, when set, is read instead of listing VMIs from Objects once it
	// has a view ([VMIIndex]): a scrape then copies no VMI.
	VMIs VMIRanger
	// StreamVMIFamilies leaves the per-VMI object families
	// (kubevirt_vmi_info, _launcher_memory_overhead_bytes, _vnic_info,
	// _non_evictable, _status_addresses) out of Collect, and
	// [ControlPlaneCollector.WriteText] writes them instead, from lines
	// rendered once per VMI resourceVersion. Serve with
	// NewHandler(registry, domains, cp).
	StreamVMIFamilies bool
	// Controllers are the reconcilers whose work queues and reconcile
	// statistics are exported (label name / controller = Stats().Name).
	Controllers []StatsProvider
	// EngineFromStatus exports virtkit_migration_* from each running
	// migration's status.migrationState.virtkitEngine. Leave it false when
	// a [DomainCollector] in the same registry exports them from live
	// engines, or the series would be collected twice.
	EngineFromStatus bool
	// ControlPlane are the virt-controller's reconcilers (a subset of, or
	// the same as, Controllers): kubevirt_virt_controller_ready_status is 1
	// once each has listed its objects. Empty: no controller status.
	ControlPlane []StatsProvider
	// Leading reports whether this control plane holds the lead
	// (kubevirt_virt_controller_leading_status); nil: it leads whenever
	// it is ready (a single control plane, no election).
	Leading func() bool
	// Handlers are the node agents whose readiness is reported
	// (kubevirt_virt_handler_ready_status{node}).
	Handlers []HandlerStatus
}

// ControlPlaneCollector exports what KubeVirt's virt-controller exports:
// VMI and VM information and phases, phase-transition histograms,
// migration outcomes and phase counts, work queues and reconcilers. It is
// safe for concurrent scrapes.
type ControlPlaneCollector struct {
	src  ControlPlaneSources
	opts Options
	log  *slog.Logger
	f    *controlPlaneFamilies

	// mu guards the transition histograms and logs.
	mu          sync.Mutex
	vmiSeen     transitionLog
	migSeen     transitionLog
	vmiPhase    *cumulativeHistogram
	vmiCreation *cumulativeHistogram
	vmiDeletion *cumulativeHistogram
	migCreation *cumulativeHistogram

	listErrors   atomic.Uint64
	vmLabelDescs descCache
	version      string

	// lines are the VMIs' rendered object-family lines for WriteText.
	lines lineCache
}

var _ prometheus.Collector = (*ControlPlaneCollector)(nil)

// NewControlPlaneCollector checks the sources and returns a collector to
// register.
func NewControlPlaneCollector(src ControlPlaneSources, opts Options) (*ControlPlaneCollector, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if src.Objects == nil && len(src.Controllers) == 0 {
		return nil, fmt.Errorf("%w: ControlPlaneSources: Objects or Controllers required", errInvalidOptions)
	}
	for i, p := range src.Controllers {
		if p == nil {
			return nil, fmt.Errorf("%w: ControlPlaneSources.Controllers[%d]: nil", errInvalidOptions, i)
		}
	}
	for i, p := range src.ControlPlane {
		if p == nil {
			return nil, fmt.Errorf("%w: ControlPlaneSources.ControlPlane[%d]: nil", errInvalidOptions, i)
		}
	}
	f := newControlPlaneFamilies()
	return &ControlPlaneCollector{
		src: src, opts: opts, log: opts.Logger, f: f, version: version(),
		vmiPhase:    newCumulativeHistogram(f.vmiPhaseTransition),
		vmiCreation: newCumulativeHistogram(f.vmiFromCreation),
		vmiDeletion: newCumulativeHistogram(f.vmiFromDeletion),
		migCreation: newCumulativeHistogram(f.migFromCreation),
	}, nil
}

// Describe sends nothing; the collector is unchecked, like the domain one.
func (c *ControlPlaneCollector) Describe(chan<- *prometheus.Desc) {}

// Collect lists the objects (within Options.ScrapeTimeout) and reads the
// controllers' statistics.
func (c *ControlPlaneCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.opts.ScrapeTimeout)
	defer cancel()
	var (
		vmis virtkit.VirtualMachineInstanceList
		vms  virtkit.VirtualMachineList
		migs virtkit.VirtualMachineInstanceMigrationList
		dvs  virtkit.DataVolumeList
	)
	listed := c.src.Objects != nil
	// VMIs from the ranger are shared, not copied; else they are listed.
	var vmiPtrs []*virtkit.VirtualMachineInstance
	ranged := listed && c.src.VMIs != nil && c.src.VMIs.RangeVMIs(func(v *virtkit.VirtualMachineInstance) bool {
		vmiPtrs = append(vmiPtrs, v)
		return true
	})
	for _, l := range []virtkit.ObjectList{&vmis, &vms, &migs} {
		if !listed {
			break
		}
		if l == virtkit.ObjectList(&vmis) && ranged {
			continue
		}
		if err := c.src.Objects.List(ctx, l, store.ListOptions{}); err != nil {
			c.listErrors.Add(1)
			c.log.Warn("metrics: listing objects", "error", err)
			listed = false
			break
		}
	}
	dvsListed := false
	if listed && needsDataVolumes(vms.Items) {
		// Only for dataVolume volumes without a template in their VM; a
		// store that cannot list them leaves their size out, nothing more.
		if err := c.src.Objects.List(ctx, &dvs, store.ListOptions{}); err != nil {
			c.log.Debug("metrics: listing DataVolumes", "error", err)
		}
		dvsListed = true
	}
	if listed {
		if !ranged {
			vmiPtrs = make([]*virtkit.VirtualMachineInstance, len(vmis.Items))
			for i := range vmis.Items {
				vmiPtrs[i] = &vmis.Items[i]
			}
		}
		c.collectVMIs(ch, vmiPtrs)
		c.collectMigrations(ch, vmiPtrs, migs.Items)
		c.collectVMs(ch, vms.Items, dvs.Items)
		c.collectSnapshots(ctx, ch, &dvs, dvsListed)
	}
	c.collectComponents(ch, listed)
	for _, p := range c.src.Controllers {
		c.collectController(ch, p.Stats())
	}
	if c.src.Objects != nil {
		send(ch, c.f.listErrors, float64(c.listErrors.Load()), "controlplane")
	}
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

func firstOf(m map[string]string, keys ...string) string {
	for _, k := range keys {
		if v := m[k]; v != "" {
			return v
		}
	}
	return ""
}

// vmiSeries writes one VMI's object families (kubevirt_vmi_info,
// _launcher_memory_overhead_bytes, _vnic_info, _non_evictable and
// _status_addresses) to out. They depend on the VMI object alone.
func (c *ControlPlaneCollector) vmiSeries(vmi *virtkit.VirtualMachineInstance, out func(f *family, v float64, values ...string)) {
	f := c.f
	machineType := ""
	if vmi.Status.Machine != nil {
		machineType = vmi.Status.Machine.Type
	}
	nonEvictable := vmi.Spec.EvictionStrategy != nil &&
		*vmi.Spec.EvictionStrategy == virtkit.EvictionStrategyLiveMigrate && !vmi.IsMigratable()
	gi := vmi.Status.GuestOSInfo
	_, outdated := vmi.Labels[outdatedLauncherLabel]
	out(f.vmiInfo, 1,
		vmi.Status.NodeName, vmi.Namespace, vmi.Name, strings.ToLower(string(vmi.Status.Phase)),
		orNone(vmi.Annotations[osAnnotation]), orNone(vmi.Annotations[workloadAnnotation]), orNone(vmi.Annotations[flavorAnnotation]),
		orNone(firstOf(vmi.Labels, instancetypeLabels...)), orNone(firstOf(vmi.Labels, preferenceLabels...)),
		gi.KernelRelease, machineType, gi.Machine, gi.Name, gi.VersionID,
		strconv.FormatBool(!nonEvictable), strconv.FormatBool(outdated), vmiPod(vmi))
	out(f.vmiOverhead, float64(memoryOverhead(vmi)), vmi.Namespace, vmi.Name)
	vnicSeries(vmi.Spec.Domain.Devices.Interfaces, vmi.Spec.Networks, func(vnic, bt, network, bn, model string) {
		out(f.vm.vmiVnic, 1, vmi.Name, vmi.Namespace, vnic, bt, network, bn, model)
	})
	if vmi.Status.NodeName != "" {
		v := 0.0
		if nonEvictable {
			v = 1
		}
		out(f.vmiNonEvictable, v, vmi.Status.NodeName, vmi.Namespace, vmi.Name)
	}
	for _, iface := range vmi.Status.Interfaces {
		// KubeVirt's rule: an interface with an address is an
		// ExternalInterface, one without a SystemInterface (unless it
		// has no name at all).
		ip := iface.IP
		if ip == "" && len(iface.IPs) > 0 {
			ip = iface.IPs[0]
		}
		typ := "ExternalInterface"
		if ip == "" {
			if iface.Name == "" && iface.InterfaceName == "" {
				continue
			}
			typ = "SystemInterface"
		}
		out(f.vmiAddresses, 1,
			vmi.Status.NodeName, vmi.Namespace, vmi.Name, iface.Name, iface.InterfaceName, ip, typ)
	}
}

// Labels and annotations KubeVirt reads the info labels from.
const (
	osAnnotation       = "vm.kubevirt.io/os"
	workloadAnnotation = "vm.kubevirt.io/workload"
	flavorAnnotation   = "vm.kubevirt.io/flavor"
)

var (
	instancetypeLabels = []string{"kubevirt.io/instancetype-name", "kubevirt.io/cluster-instancetype-name"}
	preferenceLabels   = []string{"kubevirt.io/preference-name", "kubevirt.io/cluster-preference-name"}
)

func (c *ControlPlaneCollector) collectVMIs(ch chan<- prometheus.Metric, vmis []*virtkit.VirtualMachineInstance) {
	f := c.f
	outdatedCount := 0
	out := func(f *family, v float64, values ...string) { send(ch, f, v, values...) }
	for _, vmi := range vmis {
		if _, outdated := vmi.Labels[outdatedLauncherLabel]; outdated {
			outdatedCount++
		}
		if !c.src.StreamVMIFamilies {
			c.vmiSeries(vmi, out)
		}
	}
	send(ch, f.vmiOutdated, float64(outdatedCount))

	c.mu.Lock()
	defer c.mu.Unlock()
	alive := make(map[types.UID]bool, len(vmis))
	for _, vmi := range vmis {
		c.observeVMI(vmi, alive)
	}
	c.vmiSeen.sweep(alive)
	for _, h := range []*cumulativeHistogram{c.vmiPhase, c.vmiCreation, c.vmiDeletion} {
		for _, m := range h.metrics() {
			ch <- m
		}
	}
}

// observeVMI adds the VMI's phase transitions not observed yet to the
// histograms. c.mu must be held.
func (c *ControlPlaneCollector) observeVMI(vmi *virtkit.VirtualMachineInstance, alive map[types.UID]bool) {
	ts := vmi.Status.PhaseTransitionTimestamps
	for k := c.vmiSeen.next(vmi.UID, len(ts), alive); k < len(ts); k++ {
		at := ts[k].PhaseTransitionTimestamp.Time
		phase := string(ts[k].Phase)
		if k > 0 {
			if d := at.Sub(ts[k-1].PhaseTransitionTimestamp.Time).Seconds(); d >= 0 {
				c.vmiPhase.observe(d, phase, string(ts[k-1].Phase))
			}
		}
		if d := at.Sub(vmi.CreationTimestamp.Time).Seconds(); !vmi.CreationTimestamp.IsZero() && d >= 0 {
			c.vmiCreation.observe(d, phase)
		}
		if del := vmi.DeletionTimestamp; del != nil && !at.Before(del.Time) {
			c.vmiDeletion.observe(at.Sub(del.Time).Seconds(), phase)
		}
	}
}

// observeMigration adds the migration's phase transitions not observed
// yet to the histogram. c.mu must be held.
func (c *ControlPlaneCollector) observeMigration(m *virtkit.VirtualMachineInstanceMigration, alive map[types.UID]bool) {
	ts := m.Status.PhaseTransitionTimestamps
	for k := c.migSeen.next(m.UID, len(ts), alive); k < len(ts); k++ {
		if d := ts[k].PhaseTransitionTimestamp.Sub(m.CreationTimestamp.Time).Seconds(); !m.CreationTimestamp.IsZero() && d >= 0 {
			c.migCreation.observe(d, string(ts[k].Phase))
		}
	}
}

// migrationRunningPhases are the phases KubeVirt counts as running.
var migrationRunningPhases = map[virtkit.VirtualMachineInstanceMigrationPhase]bool{
	virtkit.MigrationRunning: true, virtkit.MigrationScheduled: true, virtkit.MigrationPreparingTarget: true,
	virtkit.MigrationTargetReady: true, virtkit.MigrationWaitingForSync: true, virtkit.MigrationSynchronizing: true,
}

func (c *ControlPlaneCollector) collectMigrations(ch chan<- prometheus.Metric, vmis []*virtkit.VirtualMachineInstance, migs []virtkit.VirtualMachineInstanceMigration) {
	f := c.f
	var pending, scheduling, unset, running float64
	names := make(map[types.UID]string, len(migs))
	for i := range migs {
		m := &migs[i]
		names[m.UID] = m.Name
		switch {
		case m.Status.Phase == virtkit.MigrationPhaseUnset:
			unset++
		case m.Status.Phase == virtkit.MigrationPending:
			pending++
		case m.Status.Phase == virtkit.MigrationScheduling:
			scheduling++
		case migrationRunningPhases[m.Status.Phase]:
			running++
		case m.Status.Phase == virtkit.MigrationSucceeded:
			send(ch, f.migSucceeded, 1, m.Spec.VMIName, m.Name, m.Namespace)
		case m.Status.Phase == virtkit.MigrationFailed:
			send(ch, f.migFailed, 1, m.Spec.VMIName, m.Name, m.Namespace)
		}
	}
	send(ch, f.migPending, pending)
	send(ch, f.migScheduling, scheduling)
	send(ch, f.migUnset, unset)
	send(ch, f.migRunning, running)

	e := emitter{ch: ch, descs: &descCache{}, log: c.log}
	noLabels := vmiLabels{}
	covered := make(map[types.UID]bool, len(vmis))
	for _, vmi := range vmis {
		ms := vmi.Status.MigrationState
		if ms == nil {
			continue
		}
		name := names[ms.MigrationUID]
		if ms.StartTimestamp != nil {
			send(ch, f.migStart, float64(ms.StartTimestamp.Unix()),
				vmi.Status.NodeName, vmi.Namespace, vmi.Name, name)
		}
		if ms.EndTimestamp != nil {
			send(ch, f.migEnd, float64(ms.EndTimestamp.Unix()),
				vmi.Status.NodeName, vmi.Namespace, vmi.Name, name, migrationOutcome(ms))
		}
		if c.src.EngineFromStatus && ms.Engine != nil && !ms.Completed && !ms.Failed {
			e.reset(&noLabels, ms.SourceNode, vmi.Namespace, vmi.Name)
			emitEngineStatus(&e, &f.engine, ms.Engine)
		}
		covered[ms.MigrationUID] = true
	}
	// A finished migration whose VMI no longer records it (the VMI was
	// restarted or migrated again) keeps its times while its VMIM exists,
	// from the copy of the migration state in the VMIM's status.
	for i := range migs {
		m := &migs[i]
		ms := m.Status.MigrationState
		if ms == nil || covered[m.UID] || !m.IsFinal() {
			continue
		}
		node := ms.SourceNode
		if ms.Completed && !ms.Failed && ms.TargetNode != "" {
			node = ms.TargetNode
		}
		if ms.StartTimestamp != nil {
			send(ch, f.migStart, float64(ms.StartTimestamp.Unix()), node, m.Namespace, m.Spec.VMIName, m.Name)
		}
		if ms.EndTimestamp != nil {
			send(ch, f.migEnd, float64(ms.EndTimestamp.Unix()), node, m.Namespace, m.Spec.VMIName, m.Name, migrationOutcome(ms))
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	alive := make(map[types.UID]bool, len(migs))
	for i := range migs {
		c.observeMigration(&migs[i], alive)
	}
	c.migSeen.sweep(alive)
	for _, m := range c.migCreation.metrics() {
		ch <- m
	}
}

// emitEngineStatus writes virtkit_migration_* from the engine's record in
// the VMI status.
func emitEngineStatus(e *emitter, f *engineFamilies, s *virtkit.MigrationEngineStatus) {
	if s.PredictedTotalSeconds != nil {
		e.value(f.predictedTotal, *s.PredictedTotalSeconds)
	}
	if s.PredictedDowntimeMs != nil {
		e.value(f.predictedDowntime, *s.PredictedDowntimeMs/1000)
	}
	if s.Strategy != "" {
		e.value(f.strategy, 1, s.Strategy)
	}
	e.value(f.throttle, float64(s.ThrottlePercent)/100)
	if s.MeasuredDirtyRateBytesPerSecond != nil {
		e.value(f.dirtyRate, float64(*s.MeasuredDirtyRateBytesPerSecond))
	}
	if s.MeasuredBandwidthBytesPerSecond != nil {
		e.value(f.bandwidth, float64(*s.MeasuredBandwidthBytesPerSecond))
	}
	counts := map[string]int{}
	var order []string
	for _, d := range s.Decisions {
		if counts[d.Action] == 0 {
			order = append(order, d.Action)
		}
		counts[d.Action]++
	}
	for _, k := range order {
		e.value(f.decisions, float64(counts[k]), k)
	}
}

// vmStatusGroup groups printable statuses as KubeVirt's VM metrics do.
func vmStatusGroup(s virtkit.VirtualMachinePrintableStatus) string {
	switch s {
	case virtkit.VirtualMachineStatusRunning:
		return "running"
	case virtkit.VirtualMachineStatusProvisioning, virtkit.VirtualMachineStatusStarting,
		virtkit.VirtualMachineStatusWaitingForVolumeBinding, virtkit.VirtualMachineStatusWaitingForReceiver:
		return "starting"
	case virtkit.VirtualMachineStatusMigrating:
		return "migrating"
	case virtkit.VirtualMachineStatusStopped, virtkit.VirtualMachineStatusPaused,
		virtkit.VirtualMachineStatusStopping, virtkit.VirtualMachineStatusTerminating:
		return "non_running"
	case "":
		return "<none>"
	}
	return "error"
}

func (c *ControlPlaneCollector) collectVMs(ch chan<- prometheus.Metric, vms []virtkit.VirtualMachine, dvList []virtkit.DataVolume) {
	f := c.f
	dvs := make(map[[2]string]*virtkit.DataVolume, len(dvList))
	for i := range dvList {
		dvs[[2]string{dvList[i].Namespace, dvList[i].Name}] = &dvList[i]
	}
	for i := range vms {
		vm := &vms[i]
		var tmplAnn, tmplLabels map[string]string
		machineType := ""
		if t := vm.Spec.Template; t != nil {
			tmplAnn, tmplLabels = t.ObjectMeta.Annotations, t.ObjectMeta.Labels
			if t.Spec.Domain.Machine != nil {
				machineType = t.Spec.Domain.Machine.Type
			}
		}
		ann := func(k string) string {
			return orNone(firstOf(map[string]string{"a": vm.Annotations[k], "b": tmplAnn[k]}, "a", "b"))
		}
		instancetype := firstOf(vm.Labels, instancetypeLabels...)
		if instancetype == "" {
			instancetype = firstOf(tmplLabels, instancetypeLabels...)
		}
		preference := firstOf(vm.Labels, preferenceLabels...)
		if preference == "" {
			preference = firstOf(tmplLabels, preferenceLabels...)
		}
		group := vmStatusGroup(vm.Status.PrintableStatus)
		send(ch, f.vmInfo, 1,
			vm.Name, vm.Namespace, orNone(string(vm.Status.PrintableStatus)), group,
			ann(osAnnotation), ann(workloadAnnotation), ann(flavorAnnotation),
			orNone(instancetype), orNone(preference), orNone(machineType))
		if !vm.CreationTimestamp.IsZero() {
			send(ch, f.vmCreated, float64(vm.CreationTimestamp.Unix()), vm.Name, vm.Namespace)
		}
		// As KubeVirt: every group's series, 0 except the current group's,
		// which holds the newest change of the Ready, Failure or Paused
		// condition (when the VM entered it).
		var last int64
		for _, cond := range vm.Status.Conditions {
			switch cond.Type {
			case "Ready", "Failure", "Paused":
			default:
				continue
			}
			if t := cond.LastTransitionTime; !t.IsZero() && t.Unix() > last {
				last = t.Unix()
			}
		}
		if group == "<none>" {
			group = "error"
		}
		for _, g := range vmStatusGroups {
			v := 0.0
			if g == group {
				v = float64(last)
			}
			send(ch, f.vmGroupTransition[g], v, vm.Name, vm.Namespace)
		}
		c.collectVMSpec(ch, vm, dvs)
	}
}

// vmStatusGroups are the status groups of the transition families, in
// exposition order.
var vmStatusGroups = []string{"starting", "running", "migrating", "non_running", "error"}

func constHistogram(f *family, h Histogram, labels ...string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(h.Bounds))
	for i, ub := range h.Bounds {
		if i < len(h.Buckets) {
			buckets[ub] = h.Buckets[i]
		}
	}
	return constHist(f, h.Count, h.Sum, buckets, labels...)
}

func (c *ControlPlaneCollector) collectController(ch chan<- prometheus.Metric, s ControllerStats) {
	f := c.f
	n := s.Name
	send(ch, f.wqDepth, float64(s.QueueDepth), n)
	send(ch, f.wqAdds, float64(s.QueueAdds), n)
	send(ch, f.wqRetries, float64(s.QueueRetries), n)
	sendMetric(ch, constHistogram(f.wqQueueDuration, s.QueueWait, n))
	sendMetric(ch, constHistogram(f.wqWorkDuration, s.WorkDuration, n))
	send(ch, f.wqUnfinished, s.UnfinishedWorkSeconds, n)
	send(ch, f.wqLongest, s.LongestRunningProcessorSeconds, n)
	send(ch, f.reconciles, float64(s.Reconciles), n)
	send(ch, f.reconcileErrors, float64(s.ReconcileErrors), n)
	send(ch, f.terminalErrors, float64(s.TerminalErrors), n)
	send(ch, f.requeues, float64(s.Requeues), n)
	sendMetric(ch, constHistogram(f.reconcileTime, s.ReconcileTime, n))
	send(ch, f.activeWorkers, float64(s.ActiveWorkers), n)
	send(ch, f.relists, float64(s.Relists), n)
}
