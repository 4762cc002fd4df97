package node

// Defining and booting a VMI's domain, each in a span of its own, with the
// events KubeVirt records.

import (
	"context"
	"errors"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/tracing"
	"go.opentelemetry.io/otel/attribute"
)

// defineDomain defines the VMI's domain ("domain.define" span, Created
// event).
func (a *Agent) defineDomain(ctx context.Context, vmi *virtkit.VirtualMachineInstance, xml string) error {
	sctx, span := a.span(ctx, vmi, "domain.define")
	_, err := a.opts.Hypervisor.Define(sctx, xml)
	tracing.EndSpan(span, err)
	if err != nil {
		a.log.Warn("defining the domain failed", "vmi", vmi.Namespace+"/"+vmi.Name, "err", err)
		a.event(ctx, vmi, virtkit.EventTypeWarning, virtkit.EventReasonSyncFailed, "Define", "defining the domain failed: %s",
			tenantMessage(err, "the node's hypervisor refused it (the node's log has the details)"))
		return err
	}
	a.event(ctx, vmi, virtkit.EventTypeNormal, virtkit.EventReasonCreated, "Define", "VirtualMachineInstance defined on node %s", a.opts.NodeName)
	return nil
}

// bootDomain starts the VMI's domain ("domain.boot" span; the Started
// event goes with the status write of the Running phase).
func (a *Agent) bootDomain(ctx context.Context, vmi *virtkit.VirtualMachineInstance, domName string, paused bool) error {
	sctx, span := a.span(ctx, vmi, "domain.boot", attribute.Bool("virtkit.paused", paused))
	err := a.opts.Hypervisor.Start(sctx, domName, hypervisor.StartOptions{Paused: paused})
	if errors.Is(err, hypervisor.ErrInvalidState) {
		err = nil // already running
	}
	tracing.EndSpan(span, err)
	if err != nil {
		a.log.Warn("starting the domain failed", "vmi", vmi.Namespace+"/"+vmi.Name, "err", err)
		a.event(ctx, vmi, virtkit.EventTypeWarning, virtkit.EventReasonSyncFailed, "Start", "starting the domain failed: %s",
			tenantMessage(err, "the node's hypervisor refused it (the node's log has the details)"))
		return err
	}
	return nil
}
