package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/virtkit/virtkit/node"
)

// ErrNoNode is returned for a node name the cluster does not have.
var ErrNoNode = errors.New("no such node")

// ErrAgentState is returned by [Cluster.CrashAgent] for an agent that is
// not running and by [Cluster.RestartAgent] for one that is.
var ErrAgentState = errors.New("node agent in the wrong state")

// agentGroup is where [Cluster.Start] runs the node agents: its context
// and errgroup, so an agent can be stopped and started again on its own.
type agentGroup struct {
	mu  sync.Mutex
	ctx context.Context
	g   *errgroup.Group
}

func (a *agentGroup) set(ctx context.Context, g *errgroup.Group) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ctx, a.g = ctx, g
}

// agentRun is one node's running agent: how to stop it, when it has, and
// the error a restarted agent stopped with.
type agentRun struct {
	cancel context.CancelFunc
	done   chan struct{}
	err    *error
}

// startAgent runs agent as n's agent under the cluster's context. An agent
// stopped by CrashAgent returns without failing the cluster, and so does
// one started by RestartAgent that fails (a process that dies on start-up:
// the cluster goes on without it, [Cluster.AgentError] tells why).
func (c *Cluster) startAgent(n *Node, agent *node.Agent, restarted bool) {
	c.agents.mu.Lock()
	defer c.agents.mu.Unlock()
	ctx, cancel := context.WithCancel(c.agents.ctx)
	done := make(chan struct{})
	var failed error
	if n.Agent != agent {
		// Only a restart replaces the agent: the first start leaves the
		// field as New set it, so readers of Nodes() (metrics wiring)
		// never race with Start.
		n.Agent = agent
	}
	n.run = agentRun{cancel: cancel, done: done, err: &failed}
	parent := c.agents.ctx
	c.agents.g.Go(func() error {
		defer close(done)
		err := agent.Start(ctx)
		switch {
		case ctx.Err() != nil && parent.Err() == nil:
			return nil // crashed on purpose
		case restarted && err != nil && parent.Err() == nil:
			c.agents.mu.Lock()
			failed = err
			c.agents.mu.Unlock()
			return nil
		}
		return err
	})
}

// CrashAgent stops the agent of the named node as if its process died:
// the guests on the host keep running, heartbeats stop, nothing is written
// on the way out. It returns once the agent has stopped. Fault injection
// for simulations; [Cluster.RestartAgent] starts a new one.
func (c *Cluster) CrashAgent(ctx context.Context, name string) error {
	n, err := c.runningNode(name)
	if err != nil {
		return err
	}
	c.agents.mu.Lock()
	run := n.run
	c.agents.mu.Unlock()
	if run.cancel == nil {
		return fmt.Errorf("crash agent %s: %w: not running", name, ErrAgentState)
	}
	run.cancel()
	select {
	case <-run.done:
	case <-ctx.Done():
		return fmt.Errorf("crash agent %s: %w", name, ctx.Err())
	}
	c.agents.mu.Lock()
	n.run = agentRun{}
	c.agents.mu.Unlock()
	return nil
}

// RestartAgent starts a new agent on the named node after [Cluster.CrashAgent]:
// a fresh process that adopts the host's guests.
func (c *Cluster) RestartAgent(ctx context.Context, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	n, err := c.runningNode(name)
	if err != nil {
		return err
	}
	if c.AgentRunning(name) {
		return fmt.Errorf("restart agent %s: %w: already running", name, ErrAgentState)
	}
	agent, err := n.build()
	if err != nil {
		return fmt.Errorf("restart agent %s: %w", name, err)
	}
	c.startAgent(n, agent, true)
	return nil
}

// AgentRunning reports whether the named node's agent runs: started, not
// crashed by [Cluster.CrashAgent], not stopped by a failure.
func (c *Cluster) AgentRunning(name string) bool {
	n := c.Node(name)
	if n == nil {
		return false
	}
	c.agents.mu.Lock()
	run := n.run
	c.agents.mu.Unlock()
	if run.cancel == nil {
		return false
	}
	select {
	case <-run.done:
		return false
	default:
		return true
	}
}

// AgentError is the error the named node's restarted agent stopped with,
// or nil.
func (c *Cluster) AgentError(name string) error {
	n := c.Node(name)
	if n == nil {
		return nil
	}
	c.agents.mu.Lock()
	defer c.agents.mu.Unlock()
	if n.run.err == nil {
		return nil
	}
	return *n.run.err
}

func (c *Cluster) runningNode(name string) (*Node, error) {
	if !c.started.Load() {
		return nil, ErrNotStarted
	}
	n := c.Node(name)
	if n == nil {
		return nil, fmt.Errorf("%w: %s", ErrNoNode, name)
	}
	return n, nil
}
