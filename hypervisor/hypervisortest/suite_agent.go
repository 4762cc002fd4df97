package hypervisortest

import (
	"context"
	"errors"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/hypervisor"
)

func agentCommander(e *env) hypervisor.AgentCommander {
	a, ok := e.h.(hypervisor.AgentCommander)
	if !ok {
		e.t.Skip("backend does not implement hypervisor.AgentCommander")
	}
	return a
}

// waitAgentSettled waits until the guest agent answers, when the backend
// has one: by then the guest has finished booting. Backends without agent
// commands return at once.
func (e *env) waitAgentSettled(name string) {
	e.t.Helper()
	a, ok := e.h.(hypervisor.AgentCommander)
	if !ok {
		return
	}
	e.waitFor(e.tg.AgentTimeout, "the guest agent to answer guest-ping", func() (bool, error) {
		_, err := a.AgentCommand(context.Background(), name, `{"execute":"guest-ping"}`)
		if errors.Is(err, hypervisor.ErrNotSupported) {
			return true, nil
		}
		return err == nil, err
	})
}

// agentCall retries while the agent is not connected yet.
func (e *env) agentCall(a hypervisor.AgentCommander, name, cmd string) string {
	e.t.Helper()
	var reply string
	e.waitFor(e.tg.AgentTimeout, "the guest agent to answer "+cmd, func() (bool, error) {
		var err error
		reply, err = a.AgentCommand(context.Background(), name, cmd)
		skipIfNotSupported(e.t, err, "guest-agent commands")
		if err != nil {
			require.ErrorIs(e.t, err, hypervisor.ErrAgentUnavailable, "before the agent connects only ErrAgentUnavailable is expected")
			return false, err
		}
		return true, nil
	})
	return reply
}

func testAgentCommand(e *env) {
	a := agentCommander(e)
	name := e.name("")
	e.define(name)
	_, err := a.AgentCommand(e.ctx(), name, `{"execute":"guest-ping"}`)
	skipIfNotSupported(e.t, err, "guest-agent commands")
	require.Error(e.t, err, "agent command to a shut-off domain")
	assert.True(e.t, errors.Is(err, hypervisor.ErrInvalidState) || errors.Is(err, hypervisor.ErrAgentUnavailable),
		"agent command to a shut-off domain: %v", err)

	require.NoError(e.t, e.h.Start(e.ctx(), name, hypervisor.StartOptions{}))
	e.waitState(e.h, name, hypervisor.StateRunning, e.tg.BootTimeout)

	ping := e.agentCall(a, name, `{"execute":"guest-ping"}`)
	assert.JSONEq(e.t, `{"return":{}}`, ping)
	infoReply := e.agentCall(a, name, `{"execute":"guest-info"}`)
	assert.Contains(e.t, infoReply, `"version"`)
	assert.Contains(e.t, infoReply, `"supported_commands"`)
	assert.Contains(e.t, infoReply, `"guest-ping"`)

	info := e.info(name)
	assert.NotEqual(e.t, hypervisor.ChannelDisconnected, info.Agent, "Info.Agent once the agent answers")

	bad, err := a.AgentCommand(e.ctx(), name, `{"execute":"no-such-command-virtkit"}`)
	if err == nil {
		assert.Contains(e.t, bad, `"error"`, "an unknown command gets a QGA error reply")
	}
}
