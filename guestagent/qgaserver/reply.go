package qgaserver

import (
	"bytes"
	"encoding/json"

	"github.com/virtkit/virtkit/guestagent"
)

// allowedArguments are the arguments each command accepts (none for the
// commands not listed).
var allowedArguments = map[string][]string{
	guestagent.CmdSync:          {"id"},
	guestagent.CmdSyncDelimited: {"id"},
	guestagent.CmdShutdown:      {"mode"},
}

// encodedReturn is a return value already encoded as JSON; returnLine
// writes it as it is.
type encodedReturn []byte

// cachedReturn answers a command whose reply depends on s.cfg alone (the
// guest's identity, users, filesystems, interfaces, time zone, vCPUs and
// disks), encoding it once until Update changes the guest: agents are polled
// every few seconds for answers that rarely change. Called under s.mu.
func (s *Server) cachedReturn(cmd string) (any, *wireError) {
	if b, ok := s.returns[cmd]; ok {
		return encodedReturn(b), nil
	}
	var v any
	switch cmd {
	case guestagent.CmdInfo:
		v = guestagent.Info{Version: s.version(), SupportedCommands: s.commandList()}
	case guestagent.CmdGetOSInfo:
		v = s.cfg.OSInfo
	case guestagent.CmdGetHostName:
		v = guestagent.HostNameReply{HostName: s.cfg.HostName}
	case guestagent.CmdGetUsers:
		v = nonNil(s.cfg.Users)
	case guestagent.CmdGetFSInfo:
		v = nonNil(s.cfg.Filesystems)
	case guestagent.CmdNetworkInterfaces:
		v = nonNil(s.cfg.Interfaces)
	case guestagent.CmdGetTimezone:
		v = s.cfg.Timezone
	case guestagent.CmdGetVCPUs:
		v = nonNil(s.cfg.VCPUs)
	case guestagent.CmdGetDisks:
		v = nonNil(s.cfg.Disks)
	default:
		return nil, &wireError{"CommandNotFound", "The command " + cmd + " has not been found"}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v, nil // returnLine reports the error
	}
	if s.returns == nil {
		s.returns = map[string][]byte{}
	}
	s.returns[cmd] = b
	return encodedReturn(b), nil
}

// returnLine is the reply {"return":v,"id":id} (id left out when empty),
// encoded as encoding/json encodes that object: compact, HTML characters
// escaped, then every non-ASCII character escaped.
func returnLine(id json.RawMessage, v any) []byte {
	value, ok := v.(encodedReturn)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			return errorLine(id, "GenericError", "internal error: "+err.Error())
		}
		value = b
	}
	var line bytes.Buffer
	line.Grow(len(`{"return":,"id":}`) + len(value) + len(id))
	line.WriteString(`{"return":`)
	line.Write(value)
	if len(id) > 0 {
		line.WriteString(`,"id":`)
		var compact bytes.Buffer
		if err := json.Compact(&compact, id); err != nil {
			return errorLine(nil, "GenericError", "internal error: "+err.Error())
		}
		json.HTMLEscape(&line, compact.Bytes())
	}
	line.WriteByte('}')
	return asciiJSON(line.Bytes())
}
