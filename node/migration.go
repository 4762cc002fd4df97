package node

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/migration"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// Annotations on a Node object through which its agent publishes where
// migrations to it go (virtkit has no virt-handler proxy ports to list).
const (
	// MigrationURIAnnotation is the hypervisor address of the node for an
	// incoming migration: the libvirt URI, or on sim the host name (a
	// sim.Network peer) or the tcp:// address of its migration listener.
	MigrationURIAnnotation = "virtkit.io/migration-uri"
	// MigrationDataURIAnnotation is the data connection of an incoming
	// migration (libvirt's migrate URI), when the node sets one.
	MigrationDataURIAnnotation = "virtkit.io/migration-data-uri"
)

// DefaultParallelConnections is KubeVirt's multifd connection count.
const DefaultParallelConnections = 8

// MigrationReasonAgentRestarted is the failure reason of a migration whose
// source agent restarted while it ran: nobody watches that job any more.
const MigrationReasonAgentRestarted = "the source node agent restarted during the migration"

// MigrationOptions configure the agent's part in live migrations. The zero
// value works on sim hosts joined by a sim.Network.
type MigrationOptions struct {
	// URI is where other nodes send migrations to this node: the libvirt
	// URI of this host's daemon (qemu+tcp://host:16509/system) or, on sim,
	// the host name on a sim.Network or the tcp://HOST:PORT of the host's
	// migration listener (sim.ListenMigration). Default: the node name. Published as
	// status.migrationState.targetNodeAddress and on the Node object.
	URI string
	// Unsupported, when set, says why this node cannot take part in live
	// migrations (no reachable migration address, say). The agent logs it
	// at start-up and publishes it on its Node as
	// virtkit.MigrationUnsupportedAnnotation, so the migration
	// controller fails migrations from this node with that reason and
	// never picks it as a target.
	Unsupported string
	// DataURI is the migration data connection (libvirt's migrate URI,
	// tcp://host:port); empty lets the hypervisor choose.
	DataURI string
	// DestinationXML, when set, returns the domain XML the target should
	// run (hypervisor.MigrationParams.DestinationXML) from the source's
	// current domain XML, e.g. with the target's own runtime paths when
	// nodes have different Domain.RuntimeDir (two daemons on one machine
	// must not share socket paths). The result must keep the guest's ABI.
	DestinationXML func(vmi *virtkit.VirtualMachineInstance, targetNode, sourceXML string) (string, error)
	// Policy returns the engine policy for one migration, given its
	// resolved configuration; nil = the virtkit policy with its defaults.
	Policy func(cfg *virtkit.MigrationConfiguration) migration.Policy
	// ParallelConnections is the number of multifd connections of every
	// outgoing migration: 0 means KubeVirt's 8, 1 one stream (no multifd).
	// QEMU 9 and later do not hold multifd connections to the migration's
	// bandwidth cap (bandwidthPerMigration); the agent records a
	// MigrationBandwidthCapExceeded warning when a job runs over it, and 1
	// keeps a cap that protects a shared link.
	ParallelConnections int
	// LinkBandwidth is the capacity in bytes/s of the network outgoing
	// migrations cross (the migration NIC's speed), 0 = unknown. With a
	// bandwidthPerMigration cap below it, the engine may give QEMU the
	// configured downtime limit in full: QEMU moves the switchover's data
	// at the link's speed, not the cap's (migration.Request.LinkBandwidth).
	LinkBandwidth float64
	// Engine tunes the engine (poll interval, measurement period, clock);
	// Policy and Logger are filled in per migration.
	Engine migration.Options
	// StatusInterval bounds how often the engine's progress is written to
	// the VMI's status.migrationState.virtkitEngine; default 1 s.
	StatusInterval time.Duration
	// MaxDecisions bounds the decisions kept in the status (the newest);
	// default 50.
	MaxDecisions int
}

func (o MigrationOptions) withDefaults(nodeName string) MigrationOptions {
	if o.URI == "" {
		o.URI = nodeName
	}
	if o.StatusInterval <= 0 {
		o.StatusInterval = time.Second
	}
	if o.ParallelConnections == 0 {
		o.ParallelConnections = DefaultParallelConnections
	}
	if o.MaxDecisions <= 0 {
		o.MaxDecisions = 50
	}
	return o
}

// MigrationSnapshot is what the agent knows about one outgoing migration
// it runs, for metrics and progress displays.
type MigrationSnapshot struct {
	Namespace, Name string
	VMIUID          types.UID
	MigrationUID    types.UID
	SourceNode      string
	TargetNode      string
	// Engine is the engine's view (strategy, prediction, decisions).
	Engine migration.Snapshot
	// Stats are the job's latest counters; HaveStats is false before the
	// first poll.
	Stats     hypervisor.JobStats
	HaveStats bool
	StatsAt   time.Time
}

// MigrationSnapshots returns one snapshot per migration this agent is
// running as the source, sorted by namespace and name. It is cheap: no
// store or hypervisor call.
func (a *Agent) MigrationSnapshots() []MigrationSnapshot {
	outs := a.migs.all()
	res := make([]MigrationSnapshot, 0, len(outs))
	for _, o := range outs {
		res = append(res, a.snapshotOf(o))
	}
	sort.Slice(res, func(i, j int) bool {
		if res[i].Namespace != res[j].Namespace {
			return res[i].Namespace < res[j].Namespace
		}
		return res[i].Name < res[j].Name
	})
	return res
}

// LastMigrationSnapshot returns the final snapshot of the latest migration
// of the VMI that this agent ran as the source and that has ended (with the
// job's final counters, e.g. the actual downtime).
func (a *Agent) LastMigrationSnapshot(namespace, name string) (MigrationSnapshot, bool) {
	return a.migs.lastOf(store.Key{Namespace: namespace, Name: name})
}

func (a *Agent) snapshotOf(o *outgoing) MigrationSnapshot {
	s := MigrationSnapshot{
		Namespace: o.key.Namespace, Name: o.key.Name, VMIUID: o.vmiUID, MigrationUID: o.uid,
		SourceNode: a.opts.NodeName, TargetNode: o.target,
	}
	if e := o.getEngine(); e != nil {
		s.Engine = e.Snapshot()
	}
	s.Stats, s.StatsAt, s.HaveStats = o.rec.latest()
	return s
}

// migrationRegistry holds the outgoing migrations of an agent. Its zero
// value is ready; base is the agent's run context (set by Start), which
// outlives every reconcile.
type migrationRegistry struct {
	mu   sync.Mutex
	base context.Context
	out  map[store.Key]*outgoing
	// last is the final snapshot of the latest ended migration per VMI.
	last map[store.Key]MigrationSnapshot
	// wg tracks engine goroutines, so Start returns after they ended.
	wg sync.WaitGroup
}

func (r *migrationRegistry) setBase(ctx context.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.base = ctx
}

func (r *migrationRegistry) baseContext() context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.base == nil {
		return context.Background()
	}
	return r.base
}

func (r *migrationRegistry) get(key store.Key) *outgoing {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out[key]
}

// add registers o unless a migration of the key is already registered.
func (r *migrationRegistry) add(o *outgoing) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.out == nil {
		r.out = map[store.Key]*outgoing{}
	}
	if _, ok := r.out[o.key]; ok {
		return false
	}
	r.out[o.key] = o
	return true
}

// finish unregisters o and keeps its final snapshot.
func (r *migrationRegistry) finish(o *outgoing, final MigrationSnapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[store.Key]MigrationSnapshot{}
	}
	r.last[o.key] = final
	if r.out[o.key] == o {
		delete(r.out, o.key)
	}
}

// keepLast records o's final snapshot while o stays registered: the
// engine has ended, and readers of LastMigrationSnapshot that see the
// outcome in the VMI's status find it there too.
func (r *migrationRegistry) keepLast(o *outgoing, final MigrationSnapshot) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[store.Key]MigrationSnapshot{}
	}
	r.last[o.key] = final
}

func (r *migrationRegistry) remove(o *outgoing) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.out[o.key] == o {
		delete(r.out, o.key)
	}
}

func (r *migrationRegistry) lastOf(key store.Key) (MigrationSnapshot, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.last[key]
	return s, ok
}

func (r *migrationRegistry) all() []*outgoing {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]*outgoing, 0, len(r.out))
	for _, o := range r.out {
		out = append(out, o)
	}
	return out
}

// reconcileMigration handles the parts of a VMI's reconcile that belong to
// a migration in flight. handled=false lets the ordinary reconcile go on.
//
// The protocol, after the migration controller's hand-off (VMI
// status.migrationState {migrationUid, sourceNode, targetNode,
// migrationConfiguration} and label kubevirt.io/migrationTargetNodeName):
//
//   - Target (targetNode is this node, the VMI is not yet its): creates the
//     runtime dir, publishes its addresses (Node annotations
//     [MigrationURIAnnotation], [MigrationDataURIAnnotation];
//     migrationState.targetNodeAddress) and its activePods entry, so
//     activePods names both hosts. It keeps the arriving domain.
//   - Source (the VMI's node): once targetNodeAddress is set, writes
//     startTimestamp and mode and runs the migration engine over the
//     hypervisor's Migrator with the resolved configuration, writing the
//     engine's view into migrationState.virtkitEngine at most once per
//     StatusInterval, and enforcing completionTimeoutPerGiB (extended, up
//     to virtkitMaxCompletionTimeoutPerGiB, while the engine's model says
//     the job converges, announced by a Normal
//     [EventReasonMigrationCompletionExtended] event) and
//     progressTimeout. abortRequested (or the VMI's deletion) cancels the
//     engine, which aborts the job; the guest stays. At the end it writes
//     endTimestamp and, on failure, failed, completed, failureReason and
//     abortStatus.
//   - Target, on the source's endTimestamp without failed: takes the VMI
//     over (status.nodeName, label kubevirt.io/nodeName, the target label
//     removed, evacuationNodeName cleared, the source's activePods entry
//     removed, completed=true). The source agent then sees a domain no VMI
//     of its node wants (shut off, reason Migrated, or already undefined)
//     and removes it. On failure the target removes its half-arrived
//     domain and its activePods entry.
//   - Source, restarted (or unable to record the outcome): a guest gone
//     from this host, or shut off as migrated, left by the migration, so
//     it writes endTimestamp and the target takes over; one still here
//     fails the migration ([MigrationReasonAgentRestarted]).
func (a *Agent) reconcileMigration(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName string, info hypervisor.DomainInfo, exists bool) (res reconcile.Result, handled bool, err error) {
	if vmi == nil {
		return reconcile.Result{}, false, nil
	}
	ms := vmi.Status.MigrationState
	me := a.opts.NodeName
	key := store.Key{Namespace: vmi.Namespace, Name: vmi.Name}
	switch {
	case ms != nil && ms.MigrationUID != "" && ms.TargetNode == me && ms.SourceNode != me && vmi.Status.NodeName != me:
		res, err := a.reconcileTarget(ctx, vmi, domName, info, exists)
		return res, true, err
	case vmi.Status.NodeName == me && (a.migs.get(key) != nil ||
		(ms != nil && ms.MigrationUID != "" && ms.SourceNode == me && ms.TargetNode != me && ms.TargetNode != "")):
		return a.reconcileSource(ctx, vmi, domName, info, exists)
	}
	return reconcile.Result{}, false, nil
}

// updateMigrationState re-reads the VMI and applies fn to its
// migrationState if it still belongs to migration uid, retrying on
// conflicts. fn reports whether it changed anything.
func (a *Agent) updateMigrationState(ctx context.Context, key store.Key, uid types.UID, fn func(vmi *virtkit.VirtualMachineInstance, ms *virtkit.VirtualMachineInstanceMigrationState) bool) error {
	var err error
	for attempt := range 10 {
		vmi := &virtkit.VirtualMachineInstance{}
		if err = a.opts.Store.Get(ctx, key, vmi); err != nil {
			if errors.Is(err, store.ErrNotFound) {
				return nil
			}
			return err
		}
		ms := vmi.Status.MigrationState
		if ms == nil || ms.MigrationUID != uid {
			return nil
		}
		if !fn(vmi, ms) {
			return nil
		}
		if err = a.opts.Store.UpdateStatus(ctx, vmi); !errors.Is(err, store.ErrConflict) {
			return err
		}
		t := a.opts.Clock.NewTimer(time.Duration(attempt+1) * 5 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
	}
	return err
}
