package guestagent

import (
	"errors"
	"fmt"
	"strings"
)

// Transport and protocol failures. Deadlines and cancellation are reported
// with the context's own errors (context.DeadlineExceeded, context.Canceled)
// wrapped with the command name, so callers test them with errors.Is.
var (
	// ErrReplyTooLarge: a reply exceeded Options.MaxReplyBytes, MaxDepth or
	// MaxArrayLen. The rest of the reply is discarded unread.
	ErrReplyTooLarge = errors.New("guest agent reply too large")
	// ErrProtocol: the agent sent something that is not a valid reply
	// (garbage, wrong JSON shape, a sync reply that never matched).
	ErrProtocol = errors.New("guest agent protocol error")
	// ErrDisconnected: the channel is closed or could not be opened.
	ErrDisconnected = errors.New("guest agent disconnected")
	// ErrInvalidArgument: the caller passed a value the protocol cannot carry.
	ErrInvalidArgument = errors.New("invalid argument")
)

// Sentinels matched by *AgentError.Is against the error class the agent
// returned. ErrAgent matches every agent-side error.
var (
	ErrAgent           = errors.New("guest agent returned an error")
	ErrCommandNotFound = errors.New("CommandNotFound")
	ErrCommandDisabled = errors.New("CommandDisabled")
	ErrGenericError    = errors.New("GenericError")
)

// disabledText is how QEMU describes a command blocked with qemu-ga -b.
const disabledText = "has been disabled"

// AgentError is an error reply from the agent: {"error":{"class":..,"desc":..}}.
// Class and Desc come from the guest and are already sanitized and bounded.
type AgentError struct {
	Command string
	Class   string
	Desc    string

	// disabled records "has been disabled" seen before Desc was cut.
	disabled bool
}

func (e *AgentError) Error() string {
	return fmt.Sprintf("guest agent: %s: %s: %q", e.Command, e.Class, e.Desc)
}

// Is matches ErrAgent for any agent error and the class sentinels:
// ErrCommandNotFound for class CommandNotFound (QEMU reports disabled
// commands with that class too), ErrCommandDisabled for a command blocked
// with qemu-ga -b (class CommandDisabled on old agents, CommandNotFound with
// "has been disabled" on current ones), ErrGenericError for GenericError.
func (e *AgentError) Is(target error) bool {
	switch target {
	case ErrAgent:
		return true
	case ErrCommandNotFound:
		return e.Class == "CommandNotFound"
	case ErrCommandDisabled:
		return e.Class == "CommandDisabled" ||
			(e.Class == "CommandNotFound" && (e.disabled || strings.Contains(e.Desc, disabledText)))
	case ErrGenericError:
		return e.Class == "GenericError"
	}
	return false
}
