package controller

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/scheduler"
	"github.com/virtkit/virtkit/store"
)

// placementCache remembers the VMIs that hold node resources, as last seen
// by the VMI reconciler (every VMI change passes through it) plus the
// decisions it just made, so scheduling does not list every VMI. With an
// incremental scheduler the state lives in its [scheduler.Placements]
// (per-node usage and indexes, no copies of VMIs); with any other
// scheduler, copies of the placed VMIs are handed to every decision.
type placementCache struct {
	placements *scheduler.Placements // nil: keep vmis for a plain Scheduler

	schedMu sync.Mutex // serialises Schedule + assume for a plain Scheduler

	mu      sync.Mutex
	primed  bool
	vmis    map[store.Key]*virtkit.VirtualMachineInstance // only VMIs holding nodes
	waiting map[store.Key]bool                            // unschedulable VMIs
}

// prime lists all VMIs once, so the first decisions see what exists.
func (c *placementCache) prime(ctx context.Context, st store.Store) error {
	c.mu.Lock()
	primed := c.primed
	c.mu.Unlock()
	if primed {
		return nil
	}
	list := &virtkit.VirtualMachineInstanceList{}
	if err := st.List(ctx, list, store.ListOptions{}); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.primed {
		return nil
	}
	for i := range list.Items {
		v := &list.Items[i]
		if !scheduler.HoldsNode(v) {
			continue
		}
		if c.placements != nil {
			c.placements.ObserveIfUnknown(v)
			continue
		}
		k := store.Key{Namespace: v.Namespace, Name: v.Name}
		if _, seen := c.vmis[k]; !seen {
			c.vmis[k] = v
		}
	}
	c.primed = true
	return nil
}

// schedule decides where vmi goes and assumes it is there before the next
// decision, so concurrent workers cannot overcommit a node.
func (c *placementCache) schedule(ctx context.Context, s scheduler.Scheduler, key store.Key, vmi *virtkit.VirtualMachineInstance, nodes []virtkit.Node) (string, error) {
	if c.placements != nil {
		return c.placements.Schedule(ctx, vmi, nodes)
	}
	c.schedMu.Lock()
	defer c.schedMu.Unlock()
	nodeName, err := s.Schedule(ctx, vmi, nodes, c.placed())
	if err == nil {
		assumed := vmi.DeepCopy()
		assumed.Status.NodeName = nodeName
		assumed.Status.Phase = virtkit.Scheduled
		c.observe(key, assumed)
	}
	return nodeName, err
}

// observe records the latest state of a VMI. It keeps no reference to vmi.
func (c *placementCache) observe(key store.Key, vmi *virtkit.VirtualMachineInstance) {
	holds := scheduler.HoldsNode(vmi)
	if c.placements != nil {
		c.placements.Observe(vmi)
	}
	var cp *virtkit.VirtualMachineInstance
	if holds && c.placements == nil {
		cp = vmi.DeepCopy()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if holds {
		if cp != nil {
			c.vmis[key] = cp
		}
		delete(c.waiting, key)
	} else {
		delete(c.vmis, key)
	}
	if vmi.IsFinal() || vmi.DeletionTimestamp != nil {
		delete(c.waiting, key)
	}
}

func (c *placementCache) forget(key store.Key) {
	if c.placements != nil {
		c.placements.Forget(key.Namespace, key.Name)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.vmis, key)
	delete(c.waiting, key)
}

func (c *placementCache) wait(key store.Key) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waiting[key] = true
}

func (c *placementCache) placed() []*virtkit.VirtualMachineInstance {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*virtkit.VirtualMachineInstance, 0, len(c.vmis))
	for _, v := range c.vmis {
		out = append(out, v)
	}
	return out
}

// settled reports whether the VMI reconciler has nothing to do for vmi and
// its placement is already known as it is (only with an incremental
// scheduler, whose state can say so).
func (c *placementCache) settled(vmi *virtkit.VirtualMachineInstance) bool {
	if c.placements == nil || vmi.DeletionTimestamp != nil || vmi.IsFinal() ||
		vmi.Status.NodeName == "" || vmi.Labels[virtkit.NodeNameLabel] != vmi.Status.NodeName ||
		!hasFinalizer(vmi, virtkit.VirtualMachineInstanceFinalizer) {
		return false
	}
	c.mu.Lock()
	waiting := c.waiting[store.Key{Namespace: vmi.Namespace, Name: vmi.Name}]
	c.mu.Unlock()
	return !waiting && c.placements.Current(vmi)
}

func (c *placementCache) waitingRequests() []reconcile.Request {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]reconcile.Request, 0, len(c.waiting))
	for k := range c.waiting {
		out = append(out, reconcile.Request{Namespace: k.Namespace, Name: k.Name})
	}
	// In a stable order: a virtual cluster's single worker places them in
	// this order, and which VMI is placed first decides where each goes.
	slices.SortFunc(out, func(a, b reconcile.Request) int {
		return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out
}
