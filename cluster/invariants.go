package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/node"
	"github.com/virtkit/virtkit/store"
)

// ErrInvariant is wrapped by every violation the Check functions report.
var ErrInvariant = errors.New("cluster invariant violated")

// The invariants below read every host's hypervisor and the store at one
// moment. On a virtual clock call them after [Cluster.Settle]: between two
// steps of a protocol (a migration's hand-over, a deletion) a check can see
// a state the next step repairs.

// Observation is what the Check functions read: a store and the domains
// of every host. [Cluster.Observation] is a cluster's own; a test that runs
// node agents as separate processes builds one from what they expose (a
// node's GET /debug/domains).
type Observation struct {
	// Store holds the objects.
	Store store.Store
	// Domains lists the domains of every host.
	Domains func(ctx context.Context) ([]ObservedDomain, error)
}

// ObservedDomain is one domain on one host, with what its virtkit metadata
// says.
type ObservedDomain struct {
	Host string
	node.HostDomain
	// MetadataUnknown is true when the host could not tell whether the
	// domain carries virtkit metadata (a bare hypervisor listing, with no
	// node agent to read it): the leak check then counts it as virtkit's.
	MetadataUnknown bool
}

// Observation is c's store and the domains of its hosts, read through
// each host's node agent (or its hypervisor when it has none).
func (c *Cluster) Observation() Observation {
	return Observation{Store: c.store, Domains: func(ctx context.Context) ([]ObservedDomain, error) { return allDomains(ctx, c) }}
}

// allDomains lists the domains of every host of c.
func allDomains(ctx context.Context, c *Cluster) ([]ObservedDomain, error) {
	var out []ObservedDomain
	for _, n := range c.Nodes() {
		if n.Agent != nil {
			doms, err := n.Agent.HostDomains(ctx)
			if err != nil {
				return nil, fmt.Errorf("node %s: list domains: %w", n.Name, err)
			}
			for _, d := range doms {
				out = append(out, ObservedDomain{Host: n.Name, HostDomain: d})
			}
			continue
		}
		doms, err := n.Hypervisor.List(ctx)
		if err != nil {
			return nil, fmt.Errorf("node %s: list domains: %w", n.Name, err)
		}
		for _, d := range doms {
			out = append(out, ObservedDomain{Host: n.Name, MetadataUnknown: true, HostDomain: node.HostDomain{
				Name: d.Name, UUID: d.UUID, State: d.State, Reason: d.Reason, Active: d.State.IsActive(),
			}})
		}
	}
	return out, nil
}

// vmiOf reads the VMI a domain name stands for; nil when there is none (or
// the name is not a VMI's).
func vmiOf(ctx context.Context, st store.Store, domName string) (*virtkit.VirtualMachineInstance, error) {
	ns, name, ok := node.SplitDomainName(domName)
	if !ok {
		return nil, nil
	}
	vmi := &virtkit.VirtualMachineInstance{}
	if err := st.Get(ctx, store.Key{Namespace: ns, Name: name}, vmi); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	return vmi, nil
}

// migrationInFlight reports whether the VMI has a migration that has not
// ended (neither completed nor failed).
func migrationInFlight(vmi *virtkit.VirtualMachineInstance) bool {
	ms := vmi.Status.MigrationState
	return ms != nil && ms.MigrationUID != "" && !ms.Completed && !ms.Failed
}

// guestRuns reports whether a domain in state s executes the guest.
func guestRuns(s hypervisor.DomainState) bool {
	return s == hypervisor.StateRunning || s == hypervisor.StateBlocked || s == hypervisor.StateShutdown
}

// CheckNoDoubleRun reports an error wrapping [ErrInvariant] when a guest
// runs on two hosts at once: for every domain name, at most one host of c
// may have it running (or blocked, or shutting down). The one exception is
// a migration's hand-over: the VMI's migration has not ended and the hosts
// are its source and its target.
func CheckNoDoubleRun(ctx context.Context, c *Cluster) error {
	return CheckNoDoubleRunIn(ctx, c.Observation())
}

// CheckNoDoubleRunIn is [CheckNoDoubleRun] on an observation.
func CheckNoDoubleRunIn(ctx context.Context, o Observation) error {
	doms, err := o.Domains(ctx)
	if err != nil {
		return err
	}
	running := map[string][]string{}
	for _, d := range doms {
		if guestRuns(d.State) {
			running[d.Name] = append(running[d.Name], d.Host)
		}
	}
	var errs []error
	for _, name := range sortedKeys(running) {
		hosts := running[name]
		if len(hosts) < 2 {
			continue
		}
		vmi, err := vmiOf(ctx, o.Store, name)
		if err != nil {
			return err
		}
		if vmi != nil && migrationInFlight(vmi) && len(hosts) == 2 {
			ms := vmi.Status.MigrationState
			if slices.Contains(hosts, ms.SourceNode) && slices.Contains(hosts, ms.TargetNode) {
				continue
			}
		}
		errs = append(errs, fmt.Errorf("%w: domain %s runs on %s at once", ErrInvariant, name, strings.Join(hosts, " and ")))
	}
	return errors.Join(errs...)
}

// CheckNoPausedByEndedMigration reports an error wrapping [ErrInvariant]
// when a migration that has ended left a guest paused: a VMI whose Paused
// condition has reason PausedByMigrationMonitor without a migration in
// flight, or a domain the hypervisor reports paused for a migration
// (reason Migration or Postcopy) on a host that is neither the source nor
// the target of its VMI's migration in flight.
func CheckNoPausedByEndedMigration(ctx context.Context, c *Cluster) error {
	return CheckNoPausedByEndedMigrationIn(ctx, c.Observation())
}

// CheckNoPausedByEndedMigrationIn is [CheckNoPausedByEndedMigration] on an
// observation.
func CheckNoPausedByEndedMigrationIn(ctx context.Context, o Observation) error {
	var errs []error
	var vmis virtkit.VirtualMachineInstanceList
	if err := o.Store.List(ctx, &vmis, store.ListOptions{}); err != nil {
		return err
	}
	for i := range vmis.Items {
		vmi := &vmis.Items[i]
		cond := virtkit.GetCondition(vmi.Status.Conditions, virtkit.VirtualMachineInstancePaused)
		if cond == nil || cond.Status != virtkit.ConditionTrue || cond.Reason != virtkit.PausedByMigrationMonitorReason {
			continue
		}
		if !migrationInFlight(vmi) {
			errs = append(errs, fmt.Errorf("%w: VMI %s/%s is paused by the migration monitor but no migration is in flight",
				ErrInvariant, vmi.Namespace, vmi.Name))
		}
	}
	doms, err := o.Domains(ctx)
	if err != nil {
		return err
	}
	for _, d := range doms {
		if d.State != hypervisor.StatePaused || d.Reason != hypervisor.ReasonMigration && d.Reason != hypervisor.ReasonPostcopy {
			continue
		}
		vmi, err := vmiOf(ctx, o.Store, d.Name)
		if err != nil {
			return err
		}
		if vmi != nil && migrationInFlight(vmi) {
			ms := vmi.Status.MigrationState
			if d.Host == ms.SourceNode || d.Host == ms.TargetNode {
				continue
			}
		}
		errs = append(errs, fmt.Errorf("%w: domain %s on %s is paused (%s) with no migration of it in flight",
			ErrInvariant, d.Name, d.Host, d.Reason))
	}
	return errors.Join(errs...)
}

// CheckNoLeakedDomains reports an error wrapping [ErrInvariant] for every
// virtkit domain on a host of c that nothing accounts for. A domain is
// accounted for when its VMI exists (the same incarnation, when the
// domain's metadata names a VMI uid) and either the VMI's status names
// that host as its node, or the host is the source or target of the VMI's
// migration in flight. Domains without virtkit metadata (someone else's
// guests on a shared host) are not checked.
func CheckNoLeakedDomains(ctx context.Context, c *Cluster) error {
	return CheckNoLeakedDomainsIn(ctx, c.Observation())
}

// CheckNoLeakedDomainsIn is [CheckNoLeakedDomains] on an observation.
func CheckNoLeakedDomainsIn(ctx context.Context, o Observation) error {
	doms, err := o.Domains(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, d := range doms {
		if !d.Virtkit && !d.MetadataUnknown {
			continue
		}
		vmi, err := vmiOf(ctx, o.Store, d.Name)
		if err != nil {
			return err
		}
		why := ""
		switch {
		case vmi == nil:
			why = "its VMI does not exist"
		case d.VMIUID != "" && d.VMIUID != string(vmi.UID):
			why = fmt.Sprintf("it belongs to VMI uid %s, the VMI is now uid %s", d.VMIUID, vmi.UID)
		case vmi.Status.NodeName == d.Host:
		case migrationInFlight(vmi) && (vmi.Status.MigrationState.TargetNode == d.Host || vmi.Status.MigrationState.SourceNode == d.Host):
		default:
			why = fmt.Sprintf("its VMI is on node %q and no migration of it involves this host", vmi.Status.NodeName)
		}
		if why != "" {
			errs = append(errs, fmt.Errorf("%w: domain %s on %s (%s) is leaked: %s", ErrInvariant, d.Name, d.Host, d.State, why))
		}
	}
	return errors.Join(errs...)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
