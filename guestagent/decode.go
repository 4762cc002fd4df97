package guestagent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// checkJSONLimits scans data once and rejects nesting deeper than maxDepth
// or a container (array or object) with more than maxElems elements, so that
// json.Unmarshal never sees a document whose decoding cost the guest chose.
// It does not validate JSON; Unmarshal does that afterwards.
func checkJSONLimits(data []byte, maxDepth, maxElems int) error {
	// commas[i] counts the separators seen in the i-th open container.
	var stackBuf [64]int
	commas := stackBuf[:0]
	inString, escaped := false, false
	for _, c := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '[', '{':
			if len(commas) >= maxDepth {
				return fmt.Errorf("%w: JSON nested deeper than %d", ErrReplyTooLarge, maxDepth)
			}
			commas = append(commas, 0)
		case ']', '}':
			if len(commas) > 0 {
				commas = commas[:len(commas)-1]
			}
		case ',':
			if len(commas) > 0 {
				commas[len(commas)-1]++
				if commas[len(commas)-1] >= maxElems {
					return fmt.Errorf("%w: JSON array or object longer than %d elements", ErrReplyTooLarge, maxElems)
				}
			}
		}
	}
	return nil
}

// envelope is one reply line: a return value or an error, and the id the
// request carried (QEMU echoes it).
type envelope struct {
	Return json.RawMessage `json:"return"`
	Error  *struct {
		Class string `json:"class"`
		Desc  string `json:"desc"`
	} `json:"error"`
	ID json.RawMessage `json:"id"`
}

// decodeReply turns one reply line into out (a pointer, or nil to ignore
// the value). Agent errors become *AgentError; every other failure wraps
// ErrReplyTooLarge or ErrProtocol. wantID, when non-empty, must equal the
// reply's id if the reply carries one.
func decodeReply(data []byte, command string, wantID []byte, out any, o Options) error {
	if len(data) > o.MaxReplyBytes {
		return fmt.Errorf("guestagent: %s: %w: %d bytes, limit %d", command, ErrReplyTooLarge, len(data), o.MaxReplyBytes)
	}
	if err := checkJSONLimits(data, o.MaxDepth, o.MaxArrayLen); err != nil {
		return fmt.Errorf("guestagent: %s: %w", command, err)
	}
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		return fmt.Errorf("guestagent: %s: %w: reply is not a JSON object: %s", command, ErrProtocol, describeJSONError(err))
	}
	if len(wantID) > 0 && len(env.ID) > 0 && !bytes.Equal(bytes.TrimSpace(env.ID), wantID) {
		return fmt.Errorf("guestagent: %s: %w: reply id %q, want %q", command, ErrProtocol, Sanitize(string(env.ID), 64), wantID)
	}
	if env.Error != nil {
		return &AgentError{
			Command: command,
			Class:   Sanitize(env.Error.Class, 64),
			Desc:    Sanitize(env.Error.Desc, o.MaxStringLen),

			disabled: strings.Contains(env.Error.Desc, disabledText),
		}
	}
	if env.Return == nil {
		return fmt.Errorf("guestagent: %s: %w: reply has neither return nor error", command, ErrProtocol)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(env.Return, out); err != nil {
		return fmt.Errorf("guestagent: %s: %w: unexpected reply shape: %s", command, ErrProtocol, describeJSONError(err))
	}
	return nil
}

// describeJSONError keeps encoding/json's diagnosis but never echoes guest
// bytes unescaped (syntax errors can quote the offending character).
func describeJSONError(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("syntax error at offset %d", se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q: got JSON %s, want %s", Sanitize(te.Field, 128), te.Value, te.Type)
	}
	return Sanitize(err.Error(), 256)
}
