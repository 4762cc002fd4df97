package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilclock "k8s.io/utils/clock"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/store"
)

// Node-health defaults.
const (
	// DefaultNodeMonitorGracePeriod is how long a node may go without a new
	// heartbeat before it is marked not ready: Kubernetes'
	// node-monitor-grace-period.
	DefaultNodeMonitorGracePeriod = 40 * time.Second
	// DefaultNodeUnresponsiveGracePeriod is how much longer the VMIs of a
	// not-ready node are left alone before they fail: Kubernetes' default
	// toleration of the node.kubernetes.io/unreachable taint, after which
	// the launcher pods of KubeVirt's VMIs would be evicted.
	DefaultNodeUnresponsiveGracePeriod = 5 * time.Minute
)

// NodeHealthOptions configure the [NodeHealthReconciler]. Store is
// required; the zero value of everything else is the default.
type NodeHealthOptions struct {
	Store store.Store
	// MonitorGracePeriod: a node whose heartbeat has not changed for this
	// long becomes Ready=False/HeartbeatTimeout. 0 means
	// DefaultNodeMonitorGracePeriod.
	MonitorGracePeriod time.Duration
	// UnresponsiveGracePeriod: after a further UnresponsiveGracePeriod its
	// VMIs that are not final become Failed/NodeUnresponsive. 0 means
	// DefaultNodeUnresponsiveGracePeriod.
	UnresponsiveGracePeriod time.Duration
	// Clock is the time heartbeats are judged by; nil is the real clock.
	Clock utilclock.PassiveClock
	// Logger receives logs; nil discards them.
	Logger *slog.Logger
	// Events records NodeUnresponsive events; nil records none.
	Events events.EventRecorder
}

// NodeHealthReconciler watches node agents' heartbeats (Node
// status.lastHeartbeatTime) and takes over for agents that stopped posting
// them, like Kubernetes' node lifecycle controller and KubeVirt's node
// controller together:
//
//  1. A node whose heartbeat has not changed for MonitorGracePeriod gets
//     condition Ready=False with reason HeartbeatTimeout (unless Ready is
//     already False for another reason, such as AgentStopped). The
//     scheduler places nothing on a node that is not Ready.
//  2. UnresponsiveGracePeriod later, every VMI on the node (status.nodeName)
//     that is not final becomes Failed with status.reason NodeUnresponsive,
//     and the node agent's finalizer ([virtkit.NodeAgentFinalizer]) is removed from
//     it, because that agent is not there to remove it. The VMI controller
//     then releases the VMI and the VM controller replaces it on another
//     node where the run strategy says so (Always, RerunOnFailure).
//  3. When the agent comes back its heartbeat turns the node Ready again,
//     and its start-up recovery destroys the guests it still has for those
//     VMIs: their VMIs are gone, on another node, or a new incarnation with
//     another uid (see package node).
//
// Staleness is measured on this reconciler's own clock, from the moment it
// saw the heartbeat value change, not by comparing the agent's timestamp
// with the local time: clocks of different hosts may disagree, and a
// controller that just became leader gives every node a full grace period
// before judging it. As in KubeVirt this assumes that a node whose agent
// is silent that long is really down (or fenced); a partitioned host whose
// guests keep running would run them twice until its agent reconnects.
//
// Fencing: a node agent that publishes its fence timeout F on its Node
// ([virtkit.FenceTimeoutAnnotation]) promises to destroy its own guests once it has
// not renewed its heartbeat for F (see package node). For such a node the
// VMIs are failed no sooner than [virtkit.MinNodeGrace](F) = F + F/2 after the last
// heartbeat change this reconciler saw, even when MonitorGracePeriod plus
// UnresponsiveGracePeriod is shorter: the F/2 margin covers the agent's
// check interval, the destroy calls and the time the heartbeat write takes.
// A node that publishes no fence timeout (fencing disabled) gets the
// configured grace only, and guests of such a node that is partitioned
// rather than down can run twice.
//
// A Node object that is deleted is not taken as proof that the node is
// gone: a live agent re-registers it with its next heartbeat, as a kubelet
// does. Its VMIs fail only when no Node with a new heartbeat appears for the
// same grace as a silent node's, counted from the last heartbeat change
// seen (or from when the deletion was seen, for a node never seen before,
// which is assumed to fence as late as any node that published a fence
// timeout).
//
// Requests are Node names.
type NodeHealthReconciler struct {
	o   NodeHealthOptions
	log *slog.Logger

	mu sync.Mutex
	// seen records, per node, the last heartbeat value and when this
	// reconciler first saw it.
	seen map[string]heartbeatSeen
	// maxFence is the longest fence timeout any node has published: what
	// a node that is missing is assumed to use when its own is unknown.
	maxFence time.Duration
	// healthy holds the nodes whose last reconcile found a fresh
	// heartbeat. VMI events on them need no reconcile: the node's own
	// timer comes back before its grace period ends, and failing a node
	// lists every VMI on it. Without this every VMI write reconciled its
	// node (about four node reconciles per VM while a fleet starts).
	healthy map[string]bool
}

type heartbeatSeen struct {
	heartbeat time.Time
	at        time.Time
	// fence is the fence timeout the node last published (0: none).
	fence time.Duration
	// missing is set once the Node object was seen missing.
	missing bool
}

var _ reconcile.Reconciler = (*NodeHealthReconciler)(nil)

// NewNodeHealthReconciler returns the node-health reconciler.
func NewNodeHealthReconciler(o NodeHealthOptions) (*NodeHealthReconciler, error) {
	if o.Store == nil {
		return nil, fmt.Errorf("%w: nodehealth: Store: required", errInvalidOptions)
	}
	if o.MonitorGracePeriod < 0 {
		return nil, fmt.Errorf("%w: nodehealth: MonitorGracePeriod: %v is negative", errInvalidOptions, o.MonitorGracePeriod)
	}
	if o.UnresponsiveGracePeriod < 0 {
		return nil, fmt.Errorf("%w: nodehealth: UnresponsiveGracePeriod: %v is negative", errInvalidOptions, o.UnresponsiveGracePeriod)
	}
	if o.MonitorGracePeriod == 0 {
		o.MonitorGracePeriod = DefaultNodeMonitorGracePeriod
	}
	if o.UnresponsiveGracePeriod == 0 {
		o.UnresponsiveGracePeriod = DefaultNodeUnresponsiveGracePeriod
	}
	if o.Clock == nil {
		o.Clock = utilclock.RealClock{}
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &NodeHealthReconciler{o: o, log: log.With("reconciler", "nodehealth"), seen: map[string]heartbeatSeen{}}, nil
}

// Watches returns what the reconciler must be fed: Nodes, and VMIs mapped
// to their node (so a VMI that lands on a dead node is failed too).
func (r *NodeHealthReconciler) Watches() []reconcile.Watch {
	return []reconcile.Watch{
		{NewList: nodeList},
		{NewList: vmiList, Map: func(_ context.Context, obj virtkit.Object) []reconcile.Request {
			vmi, ok := obj.(*virtkit.VirtualMachineInstance)
			if !ok || vmi.Status.NodeName == "" || vmi.IsFinal() || r.isHealthy(vmi.Status.NodeName) {
				return nil
			}
			return []reconcile.Request{{Name: vmi.Status.NodeName}}
		}},
	}
}

// Reconcile implements Reconciler; req.Name is a Node name.
func (r *NodeHealthReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	healthy := false
	defer func() { r.setHealthy(req.Name, healthy) }()
	node := &virtkit.Node{}
	found, err := getOptional(ctx, r.o.Store, store.Key{Name: req.Name}, node)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !found {
		return r.reconcileMissing(ctx, req.Name)
	}
	hb := node.Status.LastHeartbeatTime
	if hb == nil {
		return reconcile.Result{}, nil // never reported: nothing can run there
	}
	s := r.observe(req.Name, hb.Time, r.fenceTimeout(node))
	silent := r.o.Clock.Now().Sub(s.at)
	if silent < r.o.MonitorGracePeriod {
		healthy = true
		return reconcile.Result{RequeueAfter: r.o.MonitorGracePeriod - silent + time.Second}, nil
	}
	if err := r.markNotReady(ctx, node); err != nil {
		return reconcile.Result{}, err
	}
	deadline := r.failAfter(s)
	if silent < deadline {
		return reconcile.Result{RequeueAfter: deadline - silent + time.Second}, nil
	}
	return reconcile.Result{}, r.failVMIs(ctx, req.Name, fmt.Sprintf("no heartbeat for %v", silent.Round(time.Second)))
}

// reconcileMissing handles a node whose Node object does not exist. A live
// agent re-creates it with its next heartbeat, so its VMIs are failed only
// after the grace of a silent node.
func (r *NodeHealthReconciler) reconcileMissing(ctx context.Context, name string) (reconcile.Result, error) {
	vmis, err := r.vmisOn(ctx, name)
	if err != nil {
		return reconcile.Result{}, err
	}
	if len(vmis) == 0 {
		r.forget(name) // nothing to protect; keep the memory bounded
		return reconcile.Result{}, nil
	}
	r.mu.Lock()
	s, ok := r.seen[name]
	if !ok {
		s = heartbeatSeen{at: r.o.Clock.Now()}
	}
	first := !s.missing
	s.missing = true
	// Never seen with a fence timeout (say, deleted before this
	// reconciler started): assume the longest any node has published.
	s.fence = max(s.fence, r.maxFence)
	r.seen[name] = s
	r.mu.Unlock()
	silent := r.o.Clock.Now().Sub(s.at)
	deadline := r.failAfter(s)
	if silent < deadline {
		if first {
			r.log.Info("node object missing; waiting for its agent to register it again", "node", name,
				"vmis", len(vmis), "failIn", (deadline - silent).Round(time.Second))
		}
		return reconcile.Result{RequeueAfter: deadline - silent + time.Second}, nil
	}
	why := fmt.Sprintf("node object deleted and no heartbeat for %v", silent.Round(time.Second))
	var errs []error
	for _, vmi := range vmis {
		if err := r.failVMI(ctx, vmi, why); err != nil {
			errs = append(errs, fmt.Errorf("VMI %s/%s: %w", vmi.Namespace, vmi.Name, err))
		}
	}
	return reconcile.Result{}, errors.Join(errs...)
}

// failAfter is how long after the last heartbeat change a node's VMIs are
// failed: the configured grace, extended to virtkit.MinNodeGrace of the node's
// fence timeout.
func (r *NodeHealthReconciler) failAfter(s heartbeatSeen) time.Duration {
	d := r.o.MonitorGracePeriod + r.o.UnresponsiveGracePeriod
	if s.fence > 0 {
		d = max(d, virtkit.MinNodeGrace(s.fence))
	}
	return d
}

// fenceTimeout reads the fence timeout a node agent published; 0 when
// there is none or it cannot be read.
func (r *NodeHealthReconciler) fenceTimeout(node *virtkit.Node) time.Duration {
	v, ok := node.Annotations[virtkit.FenceTimeoutAnnotation]
	if !ok {
		return 0
	}
	d, err := virtkit.ParseFenceTimeout(v)
	if err != nil {
		r.log.Warn("ignoring the node's fence timeout", "node", node.Name, "err", err)
		return 0
	}
	if g := r.o.MonitorGracePeriod + r.o.UnresponsiveGracePeriod; virtkit.MinNodeGrace(d) > g {
		r.log.Debug("node fences late: its VMIs wait longer than the configured grace", "node", node.Name,
			"fenceTimeout", d, "grace", g, "wait", virtkit.MinNodeGrace(d))
	}
	return d
}

// observe records the node's heartbeat value and fence timeout and returns
// when this reconciler first saw that heartbeat value.
// isHealthy reports whether the node's last reconcile found a fresh
// heartbeat.
func (r *NodeHealthReconciler) isHealthy(node string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.healthy[node]
}

func (r *NodeHealthReconciler) setHealthy(node string, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.healthy == nil {
		r.healthy = map[string]bool{}
	}
	if ok {
		r.healthy[node] = true
	} else {
		delete(r.healthy, node)
	}
}

func (r *NodeHealthReconciler) observe(node string, hb time.Time, fence time.Duration) heartbeatSeen {
	now := r.o.Clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.seen[node]
	if !ok || !s.heartbeat.Equal(hb) {
		s = heartbeatSeen{heartbeat: hb, at: now, fence: fence}
	} else {
		// Under one heartbeat value the longest fence timeout seen counts.
		s.fence = max(s.fence, fence)
		s.missing = false
	}
	r.seen[node] = s
	r.maxFence = max(r.maxFence, fence)
	return s
}

func (r *NodeHealthReconciler) forget(node string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.seen, node)
}

func (r *NodeHealthReconciler) markNotReady(ctx context.Context, node *virtkit.Node) error {
	for _, c := range node.Status.Conditions {
		if c.Type == virtkit.NodeReady && c.Status != virtkit.ConditionTrue {
			return nil // already not ready, maybe for a better reason
		}
	}
	virtkit.SetCondition(&node.Status.Conditions, virtkit.Condition{
		Type: virtkit.NodeReady, Status: virtkit.ConditionFalse, Reason: virtkit.NodeReasonHeartbeatTimeout,
		Message: "node agent stopped posting heartbeats",
	}, metav1.NewTime(r.o.Clock.Now()))
	if err := r.o.Store.UpdateStatus(ctx, node); err != nil {
		return err
	}
	r.log.Warn("node not ready: heartbeat timed out", "node", node.Name)
	events.RecordEvent(ctx, r.o.Events, node, virtkit.EventTypeWarning, virtkit.EventReasonNodeUnresponsive, "Monitor", "node agent stopped posting heartbeats; marking the node not ready")
	return nil
}

// failVMIs fails every VMI on the node that is not final and releases the
// node agent's finalizer on its behalf.
func (r *NodeHealthReconciler) failVMIs(ctx context.Context, node, why string) error {
	vmis, err := r.vmisOn(ctx, node)
	if err != nil {
		return err
	}
	var errs []error
	for _, vmi := range vmis {
		if err := r.failVMI(ctx, vmi, why); err != nil {
			errs = append(errs, fmt.Errorf("VMI %s/%s: %w", vmi.Namespace, vmi.Name, err))
		}
	}
	return errors.Join(errs...)
}

// vmisOn lists the VMIs whose status.nodeName is node.
func (r *NodeHealthReconciler) vmisOn(ctx context.Context, node string) ([]*virtkit.VirtualMachineInstance, error) {
	vmis := &virtkit.VirtualMachineInstanceList{}
	// Not by the node-name label: it may lag status.nodeName.
	if err := r.o.Store.List(ctx, vmis, store.ListOptions{}); err != nil {
		return nil, err
	}
	var out []*virtkit.VirtualMachineInstance
	for i := range vmis.Items {
		if vmis.Items[i].Status.NodeName == node {
			out = append(out, &vmis.Items[i])
		}
	}
	return out, nil
}

func (r *NodeHealthReconciler) failVMI(ctx context.Context, vmi *virtkit.VirtualMachineInstance, why string) error {
	if !vmi.IsFinal() {
		now := metav1.NewTime(r.o.Clock.Now())
		vmi.SetPhase(virtkit.Failed, now)
		vmi.Status.Reason = virtkit.NodeUnresponsiveReason
		virtkit.SetCondition(&vmi.Status.Conditions, virtkit.Condition{
			Type: virtkit.VirtualMachineInstanceReady, Status: virtkit.ConditionFalse,
			Reason: virtkit.GuestNotRunningReason, Message: "node " + vmi.Status.NodeName + " is unresponsive: " + why,
		}, now)
		// A failed VMI has no guest: the conditions about a running guest
		// go, as its agent drops them when it moves a VMI to a final phase.
		// A Paused condition left by a migration that the silent node could
		// not wind up would otherwise outlive the guest.
		virtkit.RemoveCondition(&vmi.Status.Conditions, virtkit.VirtualMachineInstancePaused)
		virtkit.RemoveCondition(&vmi.Status.Conditions, virtkit.VirtualMachineInstanceAgentConnected)
		if err := r.o.Store.UpdateStatus(ctx, vmi); err != nil {
			return ignoreNotFound(err)
		}
		r.log.Warn("VMI failed: node unresponsive", "vmi", vmi.Namespace+"/"+vmi.Name, "node", vmi.Status.NodeName, "why", why)
		events.RecordEvent(ctx, r.o.Events, vmi, virtkit.EventTypeWarning, virtkit.EventReasonNodeUnresponsive, "Fail", "node agent on %s is not responsive: %s; marking the VMI failed", vmi.Status.NodeName, why)
	} else if vmi.Status.Reason != virtkit.NodeUnresponsiveReason {
		// Final before the node went silent: its agent wrote the phase
		// but may have died before it released the VMI.
		if !hasFinalizer(vmi, virtkit.NodeAgentFinalizer) {
			return nil
		}
	}
	if removeFinalizers(vmi, virtkit.NodeAgentFinalizer) {
		return ignoreNotFound(r.o.Store.Update(ctx, vmi))
	}
	return nil
}
