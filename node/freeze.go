package node

import (
	"context"
	"errors"
	"fmt"

	"github.com/virtkit/virtkit/guestagent"
	"github.com/virtkit/virtkit/hypervisor"
)

// ErrFreeze wraps the failures of [Agent.Freeze] and [Agent.Unfreeze].
var ErrFreeze = errors.New("guest filesystem freeze")

// Freeze is KubeVirt's freeze subresource: it freezes the filesystems of
// the guest of VMI namespace/name, running on this node, through its guest
// agent (guest-fsfreeze-freeze) and returns how many were frozen. The
// caller thaws it with [Agent.Unfreeze]; the agent keeps no timer of its
// own (KubeVirt's unfreezeTimeout is not implemented). A domain without a
// connected guest agent gives an error matching
// hypervisor.ErrAgentUnavailable.
func (a *Agent) Freeze(ctx context.Context, namespace, name string) (int, error) {
	c, err := a.agentClient(namespace, name)
	if err != nil {
		return 0, err
	}
	n, err := c.FSFreeze(ctx)
	if err != nil {
		return 0, fmt.Errorf("vmi %s/%s: %w: %w", namespace, name, ErrFreeze, err)
	}
	return n, nil
}

// Unfreeze is KubeVirt's unfreeze subresource: it thaws the guest's
// filesystems (guest-fsfreeze-thaw) and returns how many were thawed.
func (a *Agent) Unfreeze(ctx context.Context, namespace, name string) (int, error) {
	c, err := a.agentClient(namespace, name)
	if err != nil {
		return 0, err
	}
	n, err := c.FSThaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("vmi %s/%s: %w: %w", namespace, name, ErrFreeze, err)
	}
	return n, nil
}

func (a *Agent) agentClient(namespace, name string) (*guestagent.Client, error) {
	ac, ok := a.opts.Hypervisor.(hypervisor.AgentCommander)
	if !ok {
		return nil, fmt.Errorf("vmi %s/%s: %w: node %s cannot pass guest-agent commands: %w",
			namespace, name, ErrFreeze, a.opts.NodeName, hypervisor.ErrAgentUnavailable)
	}
	opts := guestagent.Options{}
	return guestagent.New(guestagent.NewPassthroughTransport(ac, DomainName(namespace, name), opts), opts), nil
}
