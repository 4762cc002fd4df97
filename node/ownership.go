package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
)

// ErrDomainNotOwned is returned when a VMI's domain name is taken on the
// host by a domain this agent does not own (no virtkit metadata, or
// another node's): the agent never redefines or removes such a domain.
var ErrDomainNotOwned = errors.New("domain name taken by a domain this node agent does not own")

// ForeignDomain is a domain on the host that this agent leaves alone.
type ForeignDomain struct {
	// Name is the libvirt domain name.
	Name string
	// Reason says why the agent does not own it: "no virtkit metadata",
	// "virtkit metadata names no node" or "belongs to node NAME".
	Reason string
}

// ForeignDomains lists the domains on the host that this agent does not
// own and leaves alone, as of its last look at the host (at start, every
// ResyncPeriod and on each reconcile), sorted by name.
func (a *Agent) ForeignDomains() []ForeignDomain {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]ForeignDomain, 0, len(a.foreign))
	for name, why := range a.foreign {
		out = append(out, ForeignDomain{Name: name, Reason: why})
	}
	slices.SortFunc(out, func(x, y ForeignDomain) int { return strings.Compare(x.Name, y.Name) })
	return out
}

// classify decides whether the domain domName on the host is this agent's
// (see judge; a domain that arrived by live migration names its source
// node, so the VMI uid decides). Everything else is someone else's: the
// agent neither adopts, stops nor removes it, except the shut-off remains
// of a VMI that is gone (isStaleLeftover). why explains a foreign domain.
func (a *Agent) classify(ctx context.Context, domName string, info hypervisor.DomainInfo, vmi *virtkit.VirtualMachineInstance) (mine bool, why string, err error) {
	f, err := a.facts(ctx, domName, info.UUID)
	if err != nil {
		return false, "", err
	}
	mine, why = a.judge(f, vmi)
	if !mine && vmi != nil && f.virtkit {
		// The cached facts may be an earlier definition's of the same
		// name and UUID (a VM's firmware UUID is derived from its name, so
		// a re-created VMI's domain, or one that left and came back by
		// migration, has the UUID of the old one): read the XML again
		// before refusing the domain.
		a.forgetFacts(domName)
		if f, err = a.facts(ctx, domName, info.UUID); err != nil {
			return false, "", err
		}
		mine, why = a.judge(f, vmi)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if mine {
		a.owned[domName] = f.vmiUID
		delete(a.foreign, domName)
		return true, "", nil
	}
	delete(a.owned, domName)
	a.noteForeignLocked(domName, why)
	return false, why, nil
}

// judge decides ownership from a domain's facts: the domain is this
// agent's when its metadata names this node, or when it names the uid of
// vmi (the same incarnation) and vmi is on this node, or this node is the
// target of its migration, or the source its last migration left.
func (a *Agent) judge(f domainFacts, vmi *virtkit.VirtualMachineInstance) (mine bool, why string) {
	switch {
	case !f.virtkit:
		return false, "no virtkit metadata"
	case f.node == a.opts.NodeName:
		return true, ""
	case vmi != nil && f.vmiUID != "" && f.vmiUID == string(vmi.UID) && (a.owns(vmi) || a.isMigrationTarget(vmi) || a.leftByMigration(vmi)):
		return true, ""
	case f.node == "":
		return false, "virtkit metadata names no node"
	}
	return false, "belongs to node " + f.node
}

// forgetFacts drops the cached facts of a domain, so the next look reads
// its XML.
func (a *Agent) forgetFacts(domName string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	delete(a.domainFacts, domName)
}

// firstTaken reports whether what (a VMI uid and a reason) is new for the
// domain name since the last "name taken" warning, and records it: the
// reconcile of a VMI whose name is taken retries often, the log says it
// once.
func (a *Agent) firstTaken(domName, what string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.takenSaid[domName] == what {
		return false
	}
	a.takenSaid[domName] = what
	return true
}

// isStaleLeftover reports whether a domain this agent does not own is the
// shut-off remains of a VMI that is gone: its virtkit metadata names a VMI
// uid, and the VMI of that name does not exist or is another incarnation.
// A running (or paused) domain is never one: it may be the only copy of a
// guest.
func (a *Agent) isStaleLeftover(ctx context.Context, domName string, info hypervisor.DomainInfo, vmi *virtkit.VirtualMachineInstance) bool {
	if info.State.IsActive() {
		return false
	}
	f, err := a.facts(ctx, domName, info.UUID)
	if err != nil || !f.virtkit || f.vmiUID == "" {
		return false
	}
	return vmi == nil || string(vmi.UID) != f.vmiUID
}

// leftByMigration reports whether the VMI's last migration moved it away
// from this node: a domain of the VMI here is the source's copy, this
// agent's to remove.
func (a *Agent) leftByMigration(vmi *virtkit.VirtualMachineInstance) bool {
	ms := vmi.Status.MigrationState
	return ms != nil && ms.SourceNode == a.opts.NodeName && ms.Completed && !ms.Failed && vmi.Status.NodeName != a.opts.NodeName
}

// isMigrationTarget reports whether this node is the target of the VMI's
// last migration, in flight or failed: a domain of the VMI here arrived (or
// half arrived) by that migration.
func (a *Agent) isMigrationTarget(vmi *virtkit.VirtualMachineInstance) bool {
	ms := vmi.Status.MigrationState
	return ms != nil && ms.TargetNode == a.opts.NodeName
}

// noteForeignLocked records a foreign domain and logs it the first time
// (a.mu held).
func (a *Agent) noteForeignLocked(name, why string) {
	if old, seen := a.foreign[name]; !seen || old != why {
		a.log.Warn("leaving alone a domain this node agent does not own", "domain", name, "why", why)
	}
	a.foreign[name] = why
}

// ownedLocally reports whether the domain is this agent's by what the host
// alone says: its metadata names this node, or this agent adopted it. It
// needs no store, so fencing can use it (a.mu not held).
func (a *Agent) ownedLocally(ctx context.Context, d hypervisor.DomainInfo) bool {
	a.mu.Lock()
	_, adopted := a.owned[d.Name]
	a.mu.Unlock()
	if adopted {
		return true
	}
	f, err := a.facts(ctx, d.Name, d.UUID)
	return err == nil && f.virtkit && f.node == a.opts.NodeName
}

// scanHost looks at every domain on the host: it enqueues the ones that
// may be VMIs' and refreshes the list of foreign domains.
func (a *Agent) scanHost(ctx context.Context, enqueue bool) error {
	doms, err := a.opts.Hypervisor.List(ctx)
	if err != nil {
		return err
	}
	present := map[string]bool{}
	for _, d := range doms {
		present[d.Name] = true
		ns, name, splits := SplitDomainName(d.Name)
		f, err := a.facts(ctx, d.Name, d.UUID)
		if err != nil {
			if errors.Is(err, hypervisor.ErrNotFound) {
				continue
			}
			return fmt.Errorf("domain %s: %w", d.Name, err)
		}
		a.mu.Lock()
		_, adopted := a.owned[d.Name]
		switch {
		case f.virtkit && f.node == a.opts.NodeName || adopted:
			delete(a.foreign, d.Name)
		case f.virtkit && splits:
			// Maybe a VMI's that arrived by migration: the reconcile
			// decides with the VMI at hand.
		case !f.virtkit:
			a.noteForeignLocked(d.Name, "no virtkit metadata")
		case f.node == "":
			a.noteForeignLocked(d.Name, "virtkit metadata names no node")
		default:
			a.noteForeignLocked(d.Name, "belongs to node "+f.node)
		}
		a.mu.Unlock()
		// A shut-off domain of another node's may be the remains of a VMI
		// that is gone: its reconcile decides (isStaleLeftover).
		maybeStale := f.virtkit && f.vmiUID != "" && f.node != a.opts.NodeName && !adopted && !d.State.IsActive()
		if splits && f.virtkit && (enqueue || maybeStale) {
			a.Enqueue(ns, name)
		}
	}
	a.mu.Lock()
	for name := range a.foreign {
		if !present[name] {
			delete(a.foreign, name)
		}
	}
	for name := range a.owned {
		if !present[name] {
			delete(a.owned, name)
		}
	}
	for name := range a.takenSaid {
		if !present[name] {
			delete(a.takenSaid, name)
		}
	}
	for name := range a.domainFacts {
		if !present[name] {
			// Gone (undefined here, or left by migration): a domain that
			// comes back under that name is a new definition.
			delete(a.domainFacts, name)
		}
	}
	for name := range a.fenced {
		if !present[name] {
			delete(a.fenced, name)
		}
	}
	a.mu.Unlock()
	return nil
}

// HostDomain is one domain on the host as the hypervisor reports it, with
// what its virtkit metadata says.
type HostDomain struct {
	Name   string                 `json:"name"`
	UUID   string                 `json:"uuid"`
	State  hypervisor.DomainState `json:"state"`
	Reason hypervisor.StateReason `json:"reason,omitempty"`
	// Active is true for every state with a running QEMU process
	// (running, paused, blocked, shutting down, suspended).
	Active bool `json:"active"`
	// Virtkit is true when the domain carries virtkit's metadata; VMIUID
	// and Node are read from it.
	Virtkit bool   `json:"virtkit"`
	VMIUID  string `json:"vmiUID,omitempty"`
	Node    string `json:"node,omitempty"`
	// Owned is true when this agent manages the domain.
	Owned bool `json:"owned"`
}

// HostDomains reads every domain on the host straight from the hypervisor
// (no store involved), sorted by name: what the host really runs.
func (a *Agent) HostDomains(ctx context.Context) ([]HostDomain, error) {
	doms, err := a.opts.Hypervisor.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]HostDomain, 0, len(doms))
	for _, d := range doms {
		hd := HostDomain{Name: d.Name, UUID: d.UUID, State: d.State, Reason: d.Reason, Active: d.State.IsActive()}
		if f, err := a.facts(ctx, d.Name, d.UUID); err == nil {
			hd.Virtkit, hd.VMIUID, hd.Node = f.virtkit, f.vmiUID, f.node
		}
		a.mu.Lock()
		_, adopted := a.owned[d.Name]
		a.mu.Unlock()
		hd.Owned = adopted || hd.Virtkit && hd.Node == a.opts.NodeName
		out = append(out, hd)
	}
	slices.SortFunc(out, func(x, y HostDomain) int { return strings.Compare(x.Name, y.Name) })
	return out, nil
}
