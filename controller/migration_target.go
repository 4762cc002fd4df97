package controller

import (
	"context"
	"errors"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/reconcile"
	"github.com/virtkit/virtkit/scheduler"
	"github.com/virtkit/virtkit/store"
)

// schedule picks the target node: the VMI's own constraints plus
// spec.addedNodeSelector (the VMI's values win on a key collision) and a
// required anti-affinity to the source node.
func (r *MigrationReconciler) schedule(ctx context.Context, mig *virtkit.VirtualMachineInstanceMigration, vmi *virtkit.VirtualMachineInstance, now metav1.Time) (virtkit.VirtualMachineInstanceMigrationPhase, reconcile.Result, error) {
	nodes := &virtkit.NodeList{}
	if err := r.o.Store.List(ctx, nodes, store.ListOptions{}); err != nil {
		return "", reconcile.Result{}, err
	}
	// Read-only: the scheduler does not modify the placed VMIs.
	vmis, err := r.o.readList(ctx, &virtkit.VirtualMachineInstanceList{}, store.ListOptions{})
	if err != nil {
		return "", reconcile.Result{}, err
	}
	placed := make([]*virtkit.VirtualMachineInstance, 0, len(vmis))
	for _, obj := range vmis {
		if v := obj.(*virtkit.VirtualMachineInstance); scheduler.HoldsNode(v) {
			placed = append(placed, v)
		}
	}
	src := sourceOf(mig)
	if src == "" {
		src = vmi.Status.NodeName
	}
	var srcNode *virtkit.Node
	if i := slices.IndexFunc(nodes.Items, func(n virtkit.Node) bool { return n.Name == src }); i >= 0 {
		srcNode = nodes.Items[i].DeepCopy()
	}
	// The source is never a target, even for a custom scheduler or a node
	// without its hostname label.
	capable, reason := migrationCapable(nodes.Items, src)
	if reason != "" {
		return "", reconcile.Result{}, r.fail(ctx, mig, vmi, reason)
	}
	candidates := slices.DeleteFunc(capable, func(n virtkit.Node) bool { return n.Name == src })
	var target string
	candidates, err = r.volumeMigrationCandidates(ctx, mig, vmi, candidates)
	if err == nil {
		target, err = r.scheduleTarget(ctx, mig, vmi, srcNode, src, candidates, placed)
	}
	if err == nil && target == src {
		err = fmt.Errorf("%w: scheduler chose the source node %s", scheduler.ErrUnschedulable, src)
	}
	if err != nil {
		if !errors.Is(err, scheduler.ErrUnschedulable) {
			return "", reconcile.Result{}, r.fail(ctx, mig, vmi, "target placement: "+err.Error())
		}
		virtkit.SetCondition(&mig.Status.Conditions, virtkit.Condition{
			Type: virtkit.VirtualMachineInstancePodScheduled, Status: virtkit.ConditionFalse,
			Reason: virtkit.PodReasonUnschedulable, Message: truncateMsg(err.Error(), 512),
		}, now)
		if since := phaseSince(mig, virtkit.MigrationScheduling); since != nil && now.Sub(since.Time) > r.m.UnschedulableTimeout {
			return "", reconcile.Result{}, r.fail(ctx, mig, vmi, virtkit.MigrationReasonUnschedulable+": "+err.Error())
		}
		return "", reconcile.Result{RequeueAfter: requeueDelay(mig)}, nil
	}
	virtkit.RemoveCondition(&mig.Status.Conditions, virtkit.VirtualMachineInstancePodScheduled)
	if mig.Status.MigrationState == nil {
		mig.Status.MigrationState = &virtkit.VirtualMachineInstanceMigrationState{MigrationUID: mig.UID}
	}
	mig.Status.MigrationState.SourceNode = src
	mig.Status.MigrationState.TargetNode = target
	return virtkit.MigrationScheduled, reconcile.Result{}, nil
}

// targetTemplate is the VMI as the scheduler should see the target: not
// placed yet, with the added node selector and the source excluded
// (KubeVirt's UpdateAntiAffinityFromVMINode).
func targetTemplate(vmi *virtkit.VirtualMachineInstance, mig *virtkit.VirtualMachineInstanceMigration, source string) *virtkit.VirtualMachineInstance {
	t := vmi.DeepCopy()
	t.Status = virtkit.VirtualMachineInstanceStatus{}
	if len(mig.Spec.AddedNodeSelector) > 0 {
		sel := map[string]string{}
		for k, v := range mig.Spec.AddedNodeSelector {
			sel[k] = v
		}
		for k, v := range vmi.Spec.NodeSelector {
			sel[k] = v
		}
		t.Spec.NodeSelector = sel
	}
	notSource := virtkit.NodeSelectorRequirement{
		Key: scheduler.LabelHostname, Operator: virtkit.NodeSelectorOpNotIn, Values: []string{source},
	}
	if t.Spec.Affinity == nil {
		t.Spec.Affinity = &virtkit.Affinity{}
	}
	if t.Spec.Affinity.NodeAffinity == nil {
		t.Spec.Affinity.NodeAffinity = &virtkit.NodeAffinity{}
	}
	na := t.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &virtkit.NodeSelector{}
	}
	req := na.RequiredDuringSchedulingIgnoredDuringExecution
	if len(req.NodeSelectorTerms) == 0 {
		req.NodeSelectorTerms = []virtkit.NodeSelectorTerm{{}}
	}
	for i := range req.NodeSelectorTerms {
		req.NodeSelectorTerms[i].MatchExpressions = append(req.NodeSelectorTerms[i].MatchExpressions, notSource)
	}
	return t
}

// policyFor matches the MigrationPolicies against the VMI.
func (r *MigrationReconciler) policyFor(ctx context.Context, vmi *virtkit.VirtualMachineInstance) (*virtkit.MigrationPolicy, error) {
	policies := &virtkit.MigrationPolicyList{}
	if err := r.o.Store.List(ctx, policies, store.ListOptions{}); err != nil {
		return nil, err
	}
	if len(policies.Items) == 0 {
		return nil, nil
	}
	var nsLabels map[string]string
	if r.m.NamespaceLabels != nil {
		var err error
		if nsLabels, err = r.m.NamespaceLabels(ctx, vmi.Namespace); err != nil {
			return nil, fmt.Errorf("namespace %s labels: %w", vmi.Namespace, err)
		}
	}
	return MatchMigrationPolicy(policies.Items, vmi, nsLabels), nil
}
