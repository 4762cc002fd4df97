package guestagent

import (
	"context"
	"fmt"
)

// Transport carries one request to the agent and returns its reply line
// (without framing). It must honour ctx's deadline and cancellation, and it
// must return a reply longer than its limit as an error wrapping
// ErrReplyTooLarge rather than buffer it. Implementations must be safe for
// concurrent use: a Poller's workers share one Client.
type Transport interface {
	Exchange(ctx context.Context, request []byte) ([]byte, error)
}

// OneWayTransport is implemented by transports that can send a command the
// agent answers only when it fails (guest-shutdown). ExchangeOneWay returns
// the agent's reply when there is one (an error reply), or nil when the
// agent accepted the command.
type OneWayTransport interface {
	ExchangeOneWay(ctx context.Context, request []byte) ([]byte, error)
}

// TransportFunc adapts a function to Transport (handy for scripted tests).
type TransportFunc func(ctx context.Context, request []byte) ([]byte, error)

// Exchange calls f.
func (f TransportFunc) Exchange(ctx context.Context, request []byte) ([]byte, error) {
	return f(ctx, request)
}

var _ Transport = TransportFunc(nil)

// AgentCommander passes a raw command to a domain's agent and returns the
// raw reply: libvirt's virDomainQemuAgentCommand, which does its own sync
// framing. It has the signature of hypervisor.AgentCommander, so any
// hypervisor satisfies it without this package importing hypervisor.
type AgentCommander interface {
	AgentCommand(ctx context.Context, domain string, command string) (string, error)
}

// PassthroughTransport sends requests through a hypervisor's agent-command
// call. An empty reply means the agent sent none (guest-shutdown succeeded).
type PassthroughTransport struct {
	commander AgentCommander
	domain    string
	opts      Options
}

// NewPassthroughTransport returns a transport to domain's agent through ac.
func NewPassthroughTransport(ac AgentCommander, domain string, opts Options) *PassthroughTransport {
	return &PassthroughTransport{commander: ac, domain: domain, opts: opts.withDefaults()}
}

// Exchange implements Transport.
func (p *PassthroughTransport) Exchange(ctx context.Context, request []byte) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	reply, err := p.commander.AgentCommand(ctx, p.domain, string(request))
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("agent command on %q: %w (%w)", p.domain, ctxErr, err)
		}
		return nil, fmt.Errorf("agent command on %q: %w", p.domain, err)
	}
	if len(reply) > p.opts.MaxReplyBytes {
		return nil, fmt.Errorf("agent command on %q: %w: %d bytes, limit %d", p.domain, ErrReplyTooLarge, len(reply), p.opts.MaxReplyBytes)
	}
	return []byte(reply), nil
}

// ExchangeOneWay implements OneWayTransport: the hypervisor call returns an
// empty reply when the agent sent none.
func (p *PassthroughTransport) ExchangeOneWay(ctx context.Context, request []byte) ([]byte, error) {
	reply, err := p.Exchange(ctx, request)
	if err != nil || len(reply) == 0 {
		return nil, err
	}
	return reply, nil
}

var (
	_ Transport       = (*PassthroughTransport)(nil)
	_ OneWayTransport = (*PassthroughTransport)(nil)
)
