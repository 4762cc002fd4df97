package scheduler

import (
	"context"

	"github.com/virtkit/virtkit"
)

// NameLaunchSecurity is the name of the [LaunchSecurity] plugin.
const NameLaunchSecurity = "LaunchSecurity"

// Node labels that say a node can run confidential guests, as KubeVirt's
// node labeller sets them (SNP and TDX: the labels virtkit uses for the
// same purpose). The value does not matter.
const (
	LabelSEV    = virtkit.SEVLabel
	LabelSEVES  = virtkit.SEVESLabel
	LabelSEVSNP = virtkit.SEVSNPLabel
	LabelTDX    = virtkit.TDXLabel
)

// Reasons of the LaunchSecurity plugin, naming the VMI's field.
const (
	reasonNoSEV    = "node(s) didn't offer spec.domain.launchSecurity.sev (label " + LabelSEV + ")"
	reasonNoSEVES  = "node(s) didn't offer spec.domain.launchSecurity.sev.policy.encryptedState (label " + LabelSEVES + ")"
	reasonNoSEVSNP = "node(s) didn't offer spec.domain.launchSecurity.snp (label " + LabelSEVSNP + ")"
	reasonNoTDX    = "node(s) didn't offer spec.domain.launchSecurity.tdx (label " + LabelTDX + ")"
)

var (
	statusNoSEV    = NewStatus(Unschedulable, reasonNoSEV)
	statusNoSEVES  = NewStatus(Unschedulable, reasonNoSEVES)
	statusNoSEVSNP = NewStatus(Unschedulable, reasonNoSEVSNP)
	statusNoTDX    = NewStatus(Unschedulable, reasonNoTDX)
)

// LaunchSecurity filters out nodes without the capability a confidential
// VMI (spec.domain.launchSecurity) needs, read from the node's labels:
// SEV needs kubevirt.io/sev, SEV-ES (sev.policy.encryptedState) also
// kubevirt.io/sev-es, SNP kubevirt.io/sev-snp and TDX kubevirt.io/tdx.
// A VMI no node can run waits Unschedulable with the field in the reason.
type LaunchSecurity struct{}

// Name implements Plugin.
func (LaunchSecurity) Name() string { return NameLaunchSecurity }

// Filter implements FilterPlugin.
func (LaunchSecurity) Filter(_ context.Context, _ *CycleState, vmi *virtkit.VirtualMachineInstance, n *NodeInfo) *Status {
	ls := vmi.Spec.Domain.LaunchSecurity
	if ls == nil {
		return nil
	}
	has := func(k string) bool { _, ok := n.Node.Labels[k]; return ok }
	switch {
	case ls.SEV != nil:
		if !has(LabelSEV) {
			return statusNoSEV
		}
		if p := ls.SEV.Policy; p != nil && p.EncryptedState != nil && *p.EncryptedState && !has(LabelSEVES) {
			return statusNoSEVES
		}
	case ls.SNP != nil:
		if !has(LabelSEVSNP) {
			return statusNoSEVSNP
		}
	case ls.TDX != nil:
		if !has(LabelTDX) {
			return statusNoTDX
		}
	}
	return nil
}
