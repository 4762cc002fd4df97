package cluster

import (
	"fmt"

	"go.opentelemetry.io/otel/trace"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/events"
	"github.com/virtkit/virtkit/hypervisor"
	"github.com/virtkit/virtkit/node"
)

// NodeOptions configure one host's node agent built on its own, outside a
// [Cluster]: the agent of a `virtkit node` process, or of any program that
// runs hosts apart from its control plane. [New] completes the agents of
// its hosts with the same code, so an agent records the same events and
// spans in every deployment.
type NodeOptions struct {
	// Agent are the node agent's options; Agent.NodeName, Agent.Store and
	// Agent.Hypervisor are required.
	Agent node.Options
	// Events records the agent's events when Agent.Events is nil. Nil
	// means a store-backed events.Recorder on Agent.Store that reports as
	// virtkit.ReportingNodeAgent with the node's name as its instance,
	// what [New] gives each of its hosts. Pass events.Discard{} to record
	// none. [New] runs the retries of failed writes of the recorders it
	// makes (events.Recorder.Start); the recorder NewNode makes retries
	// none, as nothing runs it.
	Events events.EventRecorder
	// TracerProvider traces the agent when Agent.TracerProvider is nil;
	// nil traces nothing.
	TracerProvider trace.TracerProvider
	// GuestAgent tunes the guest-agent pollers made when Agent.GuestInfo is
	// nil and the hypervisor runs guest-agent commands; the zero value is
	// KubeVirt's intervals on the agent's clock and logger.
	GuestAgent node.GuestAgentSourceOptions
}

// NewNode builds one host's node agent as [New] builds each of its hosts:
// its event recorder, tracer provider and guest-agent source are filled in
// where Agent leaves them nil. Nothing runs until the agent's Start.
func NewNode(o NodeOptions) (*node.Agent, error) {
	no := o.Agent
	if no.Store == nil {
		return nil, fmt.Errorf("%w: Agent.Store: required", errInvalidOptions)
	}
	if _, err := nodeObservability(&no, o.Events, o.TracerProvider); err != nil {
		return nil, err
	}
	nodeGuestInfo(&no, o.GuestAgent)
	return node.New(no)
}

// nodeObservability gives a node agent rec and tp unless its options
// already name theirs; a nil rec means the agent's own store-backed
// recorder, reporting as virtkit.ReportingNodeAgent with the node name
// as the reporting instance, which it returns (nil when it made none).
func nodeObservability(no *node.Options, rec events.EventRecorder, tp trace.TracerProvider) (*events.Recorder, error) {
	if no.TracerProvider == nil {
		no.TracerProvider = tp
	}
	if no.Events != nil {
		return nil, nil
	}
	if rec != nil {
		no.Events = rec
		return nil, nil
	}
	r, err := events.NewRecorder(events.Options{Store: no.Store, ReportingController: virtkit.ReportingNodeAgent,
		ReportingInstance: no.NodeName, Clock: no.Clock, Logger: no.Logger})
	if err != nil {
		return nil, fmt.Errorf("%w: node %s events: %w", errInvalidOptions, no.NodeName, err)
	}
	no.Events = r
	return r, nil
}

// nodeGuestInfo gives a node agent a guest-agent source when it has none
// and its hypervisor runs guest-agent commands.
func nodeGuestInfo(no *node.Options, gao node.GuestAgentSourceOptions) {
	if no.GuestInfo != nil {
		return
	}
	ac, ok := no.Hypervisor.(hypervisor.AgentCommander)
	if !ok {
		return
	}
	if gao.Poller.Clock == nil {
		gao.Poller.Clock = no.Clock
	}
	if gao.Logger == nil {
		gao.Logger = no.Logger
	}
	no.GuestInfo = node.NewGuestAgentSource(ac, gao)
}
