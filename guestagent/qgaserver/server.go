package qgaserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/virtkit/virtkit/guestagent"
)

// DefaultVersion is the agent version reported when Config.Version is empty
// (the qemu-guest-agent of Debian 12).
const DefaultVersion = "7.2.22"

// maxRequestBytes bounds one request line; qemu-ga's own limit is larger,
// but no request of this protocol comes close.
const maxRequestBytes = 64 << 10

// Config is the simulated guest. The zero value is a guest with an empty
// identity whose agent (version DefaultVersion) supports every command this
// server implements.
type Config struct {
	// Version is guest-info's version (default DefaultVersion).
	Version string
	// Commands is guest-info's supported_commands; nil lists every command
	// the server implements, enabled unless named in Disabled.
	Commands []guestagent.CommandInfo
	// Disabled commands answer CommandNotFound "has been disabled", like
	// qemu-ga -b.
	Disabled []string

	OSInfo      guestagent.OSInfo
	HostName    string
	Users       []guestagent.User
	Filesystems []guestagent.FSInfo
	Interfaces  []guestagent.NetworkInterface
	Timezone    guestagent.Timezone
	VCPUs       []guestagent.VCPU
	Disks       []guestagent.Disk

	// Clock is guest-get-time's clock (nil: time.Now).
	Clock func() time.Time
	// OnShutdown is called for an accepted guest-shutdown with its mode
	// ("powerdown", "reboot" or "halt"); an error becomes a GenericError
	// reply. nil accepts and does nothing.
	OnShutdown func(mode string) error

	// Fault is the initial fault; see Server.SetFault.
	Fault Fault
	// Logger receives debug records (nil discards).
	Logger *slog.Logger
}

// Server is one simulated guest agent. It is safe for concurrent use; each
// connection is served in order, one request at a time, like qemu-ga.
type Server struct {
	mu     sync.Mutex
	cfg    Config
	fault  Fault
	frozen bool
	calls  map[string]int
	log    *slog.Logger
	// returns caches the encoded return value of the commands whose answer
	// depends on cfg alone (see cachedReturn); Update clears it.
	returns map[string][]byte
}

// New returns a server for cfg. The server keeps cfg's slices and encodes
// each reply that depends on them once; callers that go on changing them
// must use Update instead.
func New(cfg Config) *Server {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{cfg: cfg, fault: cfg.Fault, calls: map[string]int{}, log: log}
}

// Update changes the guest's state under the server's lock; replies sent
// after it returns reflect the change.
func (s *Server) Update(f func(*Config)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.cfg)
	clear(s.returns)
}

// SetFault replaces the current fault (Fault{} clears it).
func (s *Server) SetFault(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fault = f
}

// Calls returns how many requests for command the server has received.
func (s *Server) Calls(command string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[command]
}

// FreezeStatus is the guest's filesystem freeze state.
func (s *Server) FreezeStatus() guestagent.FreezeStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.frozen {
		return guestagent.FreezeStatusFrozen
	}
	return guestagent.FreezeStatusThawed
}

// Serve accepts connections on l and serves each until it closes or ctx
// ends. It returns nil when ctx ends, and closes l then.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	stop := context.AfterFunc(ctx, func() { _ = l.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("qgaserver: accept: %w", err)
		}
		wg.Go(func() {
			defer func() { _ = conn.Close() }()
			if err := s.ServeConn(ctx, conn); err != nil {
				s.log.Debug("qgaserver: connection ended", "err", err)
			}
		})
	}
}

// ServeConn serves one byte stream until it ends (nil), a fault closes it,
// or ctx ends (ctx.Err()). rw is closed when ctx ends if it is an io.Closer.
// Requests are read ahead into a small queue, as the kernel buffers a real
// channel, so a client that writes while the agent writes cannot deadlock an
// unbuffered stream such as net.Pipe.
func (s *Server) ServeConn(ctx context.Context, rw io.ReadWriter) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if c, ok := rw.(io.Closer); ok {
		stop := context.AfterFunc(ctx, func() { _ = c.Close() })
		defer stop()
	}
	lines := make(chan []byte, 16)
	readErr := make(chan error, 1)
	go func() {
		r := bufio.NewReaderSize(rw, 4096)
		for {
			line, err := readRequestLine(r)
			if err != nil {
				readErr <- err
				close(lines)
				return
			}
			select {
			case lines <- line:
			case <-ctx.Done():
				readErr <- ctx.Err()
				close(lines)
				return
			}
		}
	}()
	w := bufio.NewWriterSize(rw, 4096)
	for line := range lines {
		for _, req := range splitRequests(line) {
			res := s.dispatch(req)
			if err := s.send(ctx, w, res, rw); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return err
			}
		}
	}
	err := <-readErr
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrClosedPipe) {
		return nil
	}
	return err
}

// readRequestLine reads one line; an overlong line is returned cut so that
// it yields a parse error, and the rest of it is skipped.
func readRequestLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line) < maxRequestBytes {
			line = append(line, chunk...)
		}
		if err == nil {
			return line, nil
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if len(line) > 0 && errors.Is(err, io.EOF) {
			return line, nil
		}
		return nil, err
	}
}

// splitRequests splits a line into requests: at 0xFF bytes, which, like in
// qemu-ga, reset the parser (dropping a half-received request) and draw a
// parse error each, and between JSON values written back to back.
func splitRequests(line []byte) [][]byte {
	var out [][]byte
	for {
		i := bytes.IndexByte(line, 0xFF)
		if i < 0 {
			break
		}
		out = append(out, []byte{0xFF})
		line = line[i+1:]
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	for {
		start := dec.InputOffset()
		var v json.RawMessage
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			if rest := bytes.TrimSpace(line[start:]); len(rest) > 0 {
				out = append(out, rest)
			}
			return out
		}
		out = append(out, v)
	}
}

// result is one dispatched request.
type result struct {
	command string
	reply   []byte // the reply line without newline; nil: no reply
}

type wireRequest struct {
	Execute   string          `json:"execute"`
	Arguments json.RawMessage `json:"arguments"`
	ID        json.RawMessage `json:"id"`
}

type wireError struct {
	Class string `json:"class"`
	Desc  string `json:"desc"`
}

func (s *Server) dispatch(raw []byte) result {
	if len(raw) == 1 && raw[0] == 0xFF {
		return result{reply: errorLine(nil, "GenericError", "JSON parse error, stray '\ufffd'")}
	}
	if !json.Valid(raw) {
		return result{reply: errorLine(nil, "GenericError", "JSON parse error, invalid input "+quoteGuest(raw))}
	}
	return s.dispatchValid(raw)
}

// dispatchValid is dispatch for raw known to be one valid JSON value.
func (s *Server) dispatchValid(raw []byte) result {
	if raw[0] != '{' {
		return result{reply: errorLine(nil, "GenericError", "QMP input must be a JSON object")}
	}
	var req wireRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		return result{reply: errorLine(nil, "GenericError", "QMP input member 'execute' must be a string")}
	}
	if req.Execute == "" {
		return result{reply: errorLine(req.ID, "GenericError", "QMP input lacks member 'execute'")}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls[req.Execute]++
	res := result{command: req.Execute}
	value, werr := s.run(&req)
	switch {
	case werr != nil:
		res.reply = errorLine(req.ID, werr.Class, werr.Desc)
	case value == nil:
		// no reply (guest-shutdown)
	default:
		res.reply = returnLine(req.ID, value)
	}
	if req.Execute == guestagent.CmdSyncDelimited && res.reply != nil {
		res.reply = append([]byte{0xFF}, res.reply...)
	}
	return res
}

// run executes one request under s.mu and returns the value to return or
// the error to send. A nil value with nil error means no reply.
func (s *Server) run(req *wireRequest) (any, *wireError) {
	cmd := req.Execute
	if !s.implemented(cmd) {
		return nil, &wireError{"CommandNotFound", fmt.Sprintf("The command %s has not been found", cmd)}
	}
	if slices.Contains(s.cfg.Disabled, cmd) {
		return nil, &wireError{"CommandNotFound", fmt.Sprintf("Command %s has been disabled", cmd)}
	}
	var args map[string]json.RawMessage
	if len(req.Arguments) > 0 && string(req.Arguments) != "null" {
		if err := json.Unmarshal(req.Arguments, &args); err != nil {
			return nil, &wireError{"GenericError", "QMP input member 'arguments' must be an object"}
		}
	}
	allowed := allowedArguments[cmd]
	for name := range args {
		if !slices.Contains(allowed, name) {
			return nil, &wireError{"GenericError", fmt.Sprintf("Parameter %s is unexpected", quoteGuest([]byte(name)))}
		}
	}
	switch cmd {
	case guestagent.CmdSync, guestagent.CmdSyncDelimited:
		raw, ok := args["id"]
		if !ok {
			return nil, &wireError{"GenericError", "Parameter 'id' is missing"}
		}
		id, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil {
			return nil, &wireError{"GenericError", "Invalid parameter type for 'id', expected: integer"}
		}
		if s.faultApplies(cmd) && s.fault.Mode == FaultWrongSyncID {
			s.spendFault()
			id++
		}
		return id, nil
	case guestagent.CmdPing:
		return struct{}{}, nil
	case guestagent.CmdInfo, guestagent.CmdGetOSInfo, guestagent.CmdGetHostName, guestagent.CmdGetUsers,
		guestagent.CmdGetFSInfo, guestagent.CmdNetworkInterfaces, guestagent.CmdGetTimezone,
		guestagent.CmdGetVCPUs, guestagent.CmdGetDisks:
		return s.cachedReturn(cmd)
	case guestagent.CmdGetTime:
		now := time.Now
		if s.cfg.Clock != nil {
			now = s.cfg.Clock
		}
		return now().UnixNano(), nil
	case guestagent.CmdFSFreezeStatus:
		if s.frozen {
			return guestagent.FreezeStatusFrozen, nil
		}
		return guestagent.FreezeStatusThawed, nil
	case guestagent.CmdFSFreezeFreeze:
		if s.frozen {
			return nil, &wireError{"GenericError", "The command guest-fsfreeze-freeze has been disabled for this instance"}
		}
		s.frozen = true
		return len(s.cfg.Filesystems), nil
	case guestagent.CmdFSFreezeThaw:
		if !s.frozen {
			return 0, nil
		}
		s.frozen = false
		return len(s.cfg.Filesystems), nil
	case guestagent.CmdShutdown:
		mode := "powerdown"
		if raw, ok := args["mode"]; ok {
			if err := json.Unmarshal(raw, &mode); err != nil {
				return nil, &wireError{"GenericError", "Invalid parameter type for 'mode', expected: string"}
			}
		}
		switch mode {
		case "powerdown", "reboot", "halt":
		default:
			return nil, &wireError{"GenericError", fmt.Sprintf("Invalid parameter %s", quoteGuest([]byte(mode)))}
		}
		if s.cfg.OnShutdown != nil {
			if err := s.cfg.OnShutdown(mode); err != nil {
				return nil, &wireError{"GenericError", err.Error()}
			}
		}
		return nil, nil
	}
	return nil, &wireError{"CommandNotFound", fmt.Sprintf("The command %s has not been found", cmd)}
}

// implementedCommands are the commands this server answers, in the order
// guest-info lists them.
var implementedCommands = []string{
	guestagent.CmdSyncDelimited, guestagent.CmdSync, guestagent.CmdPing, guestagent.CmdInfo,
	guestagent.CmdGetOSInfo, guestagent.CmdGetHostName, guestagent.CmdGetUsers, guestagent.CmdGetFSInfo,
	guestagent.CmdNetworkInterfaces, guestagent.CmdGetTimezone, guestagent.CmdGetTime, guestagent.CmdGetVCPUs,
	guestagent.CmdGetDisks, guestagent.CmdFSFreezeStatus, guestagent.CmdFSFreezeFreeze, guestagent.CmdFSFreezeThaw,
	guestagent.CmdShutdown,
}

// ImplementedCommands returns the commands the server answers.
func ImplementedCommands() []string { return slices.Clone(implementedCommands) }

func (s *Server) implemented(cmd string) bool { return slices.Contains(implementedCommands, cmd) }

func (s *Server) version() string {
	if s.cfg.Version == "" {
		return DefaultVersion
	}
	return s.cfg.Version
}

func (s *Server) commandList() []guestagent.CommandInfo {
	if s.cfg.Commands != nil {
		return slices.Clone(s.cfg.Commands)
	}
	out := make([]guestagent.CommandInfo, 0, len(implementedCommands))
	for _, c := range implementedCommands {
		out = append(out, guestagent.CommandInfo{
			Name:            c,
			Enabled:         !slices.Contains(s.cfg.Disabled, c),
			SuccessResponse: c != guestagent.CmdShutdown,
		})
	}
	return out
}

// send writes one reply, applying the current fault.
func (s *Server) send(ctx context.Context, w *bufio.Writer, res result, rw io.ReadWriter) error {
	if res.reply == nil {
		return nil
	}
	f := s.takeFault(res.command)
	switch f.Mode {
	case FaultSlow:
		t := time.NewTimer(f.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	case FaultSilent:
		return nil
	case FaultGarbage:
		if _, err := w.Write(garbage(f.Size)); err != nil {
			return err
		}
		return w.Flush()
	case FaultOversized:
		if err := writeOversized(w, f.Size); err != nil {
			return err
		}
		return w.Flush()
	case FaultDisconnect:
		if _, err := w.Write(res.reply[:len(res.reply)/2]); err != nil {
			return err
		}
		_ = w.Flush()
		if c, ok := rw.(io.Closer); ok {
			_ = c.Close()
		}
		return errDisconnect
	}
	if _, err := w.Write(res.reply); err != nil {
		return err
	}
	if err := w.WriteByte('\n'); err != nil {
		return err
	}
	return w.Flush()
}

// HandleCommand answers one command the way libvirt's
// virDomainQemuAgentCommand returns it: the whole reply object as a string,
// or "" for a command that sends no reply (an accepted guest-shutdown). It
// lets a simulated hypervisor implement AgentCommand. Faults apply: slow
// waits, silent blocks until ctx ends, garbage and oversized return such
// replies, disconnect returns an error wrapping guestagent.ErrDisconnected.
func (s *Server) HandleCommand(ctx context.Context, cmdJSON string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	line := bytes.TrimSpace([]byte(cmdJSON))
	if len(line) > maxRequestBytes {
		line = line[:maxRequestBytes]
	}
	var res result
	if bytes.IndexByte(line, 0xFF) < 0 && json.Valid(line) {
		// One JSON value, the usual request: splitRequests would return
		// line itself (trimmed, so no JSON whitespace around it).
		res = s.dispatchValid(line)
	} else {
		reqs := splitRequests(line)
		if len(reqs) == 0 {
			return errorString(nil, "GenericError", "JSON parse error, empty input"), nil
		}
		res = s.dispatch(reqs[len(reqs)-1])
	}
	if res.reply == nil {
		return "", nil
	}
	f := s.takeFault(res.command)
	switch f.Mode {
	case FaultSlow:
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	case FaultSilent:
		<-ctx.Done()
		return "", ctx.Err()
	case FaultGarbage:
		return string(garbage(f.Size)), nil
	case FaultOversized:
		var b bytes.Buffer
		_ = writeOversized(&b, f.Size)
		return b.String(), nil
	case FaultDisconnect:
		return "", errDisconnect
	}
	return string(bytes.TrimPrefix(res.reply, []byte{0xFF})), nil
}

func errorLine(id json.RawMessage, class, desc string) []byte {
	b, _ := json.Marshal(struct {
		Error wireError       `json:"error"`
		ID    json.RawMessage `json:"id,omitempty"`
	}{wireError{class, desc}, id})
	return asciiJSON(b)
}

// asciiJSON escapes every non-ASCII character as \uXXXX, as QEMU's JSON
// writer does, so no reply byte is ever 0xFF (the sync marker). Outside
// strings JSON is ASCII already, so only string contents change.
func asciiJSON(b []byte) []byte {
	ascii := true
	for _, c := range b {
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if ascii {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		if r < utf8.RuneSelf {
			out = append(out, byte(r))
			continue
		}
		if r > 0xFFFF {
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
			continue
		}
		out = fmt.Appendf(out, `\u%04x`, r)
	}
	return out
}

func errorString(id json.RawMessage, class, desc string) string {
	return string(errorLine(id, class, desc))
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// quoteGuest quotes client bytes for an error message, bounded.
func quoteGuest(b []byte) string {
	return "'" + guestagent.Sanitize(string(bytes.TrimSpace(b)), 64) + "'"
}
