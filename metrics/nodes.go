package metrics

import (
	"context"
	"errors"

	"github.com/virtkit/virtkit/hypervisor"
)

// NodeMemoryReader reports a host's memory; a node's [DomainStatser] that
// also implements it (hypervisor.NodeMemoryReporter: the simulated host
// and the libvirt adapter) gives the virtkit_node_memory_* families. It
// must honour ctx.
type NodeMemoryReader interface {
	NodeMemory(ctx context.Context) (hypervisor.NodeMemory, error)
}

var _ NodeMemoryReader = hypervisor.NodeMemoryReporter(nil)

// nodeMemoryFamilies are the host memory gauges, named after
// node-exporter's node_memory_MemTotal_bytes, _MemFree_bytes,
// _Buffers_bytes, _Cached_bytes and _MemAvailable_bytes under virtkit's
// prefix (KubeVirt serves no such family), with a node label.
type nodeMemoryFamilies struct {
	total, free, buffers, cached, available *family
}

func newNodeMemoryFamilies() nodeMemoryFamilies {
	return nodeMemoryFamilies{
		total: newFamily("virtkit_node_memory_total_bytes",
			"Memory of the node's host (MemTotal), as its hypervisor reports it.", gauge, "node"),
		free: newFamily("virtkit_node_memory_free_bytes",
			"Memory of the node's host that is unused (MemFree), as its hypervisor reports it.", gauge, "node"),
		buffers: newFamily("virtkit_node_memory_buffers_bytes",
			"Memory of the node's host in block-device buffers (Buffers), as its hypervisor reports it.", gauge, "node"),
		cached: newFamily("virtkit_node_memory_cached_bytes",
			"Memory of the node's host in the page cache (Cached), as its hypervisor reports it.", gauge, "node"),
		available: newFamily("virtkit_node_memory_available_bytes",
			"Memory of the node's host available to new processes (MemAvailable), when its hypervisor reports it.", gauge, "node"),
	}
}

// memTask is one node's memory fetch.
type memTask struct {
	node *nodeState
	r    NodeMemoryReader
	mem  hypervisor.NodeMemory
	err  error
}

// nodeMemoryTasks lists the nodes whose hypervisor reports host memory.
func (c *DomainCollector) nodeMemoryTasks() []memTask {
	var mems []memTask
	for _, n := range c.order {
		if r, ok := n.src.Domains.(NodeMemoryReader); ok {
			mems = append(mems, memTask{node: n, r: r})
		}
	}
	return mems
}

// emitNodeMemory writes the fetched node memory; done tells which fetches
// finished in time. A backend that cannot report it gives no series and
// no error.
func (c *DomainCollector) emitNodeMemory(e *emitter, mems []memTask, done []bool) {
	f := &c.f.nodeMem
	for i := range mems {
		m := &mems[i]
		n := m.node
		// An abandoned fetch may still be writing its slot: read it only
		// when done.
		if !done[i] || errors.Is(m.err, context.DeadlineExceeded) || errors.Is(m.err, context.Canceled) {
			n.timeouts.Add(1)
			c.log.Warn("metrics: node memory missed the scrape deadline", "node", n.src.Name)
			continue
		}
		switch {
		case errors.Is(m.err, hypervisor.ErrNotSupported):
			continue
		case m.err != nil:
			n.errors.Add(1)
			c.log.Warn("metrics: reading node memory", "node", n.src.Name, "error", m.err)
			continue
		}
		for _, s := range []struct {
			f *family
			v hypervisor.Measured[uint64]
		}{{f.total, m.mem.Total}, {f.free, m.mem.Free}, {f.buffers, m.mem.Buffers}, {f.cached, m.mem.Cached}, {f.available, m.mem.Available}} {
			if v, ok := s.v.Get(); ok {
				e.plain(s.f, float64(v), n.src.Name)
			}
		}
	}
}

// emitNodes writes the per-node families: deprecated machine types and
// whether the domains run under software emulation (from the domain
// types read with the device names; absent when no domain was read).
func (c *DomainCollector) emitNodes(ctx context.Context, e *emitter, tasks []domainTask, done []bool) {
	known, emulated := false, false
	for i := range tasks {
		if !done[i] || tasks[i].names == nil || tasks[i].names.domainType == "" {
			continue
		}
		known = true
		if tasks[i].names.domainType != "kvm" {
			emulated = true
		}
	}
	if known {
		e.plain(c.f.emulation, boolValue(emulated))
	}
	for _, n := range c.order {
		ms, ok := n.machineTypes(ctx)
		if !ok {
			continue
		}
		for _, m := range ms {
			if m.Deprecated {
				e.plain(c.f.deprecatedMachines, 1, m.Name, n.src.Name)
			}
		}
	}
}
