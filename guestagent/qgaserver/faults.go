package qgaserver

// Faults: how a misbehaving agent answers (slow, silent, garbage,
// oversized, a wrong sync id, a dropped connection), and when.

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/virtkit/virtkit/guestagent"
)

// FaultMode selects how a faulty agent misbehaves.
type FaultMode int

// The fault modes.
const (
	// FaultNone answers normally.
	FaultNone FaultMode = iota
	// FaultSlow answers after Fault.Delay.
	FaultSlow
	// FaultSilent reads requests and never answers.
	FaultSilent
	// FaultGarbage answers with Fault.Size bytes (default 64) that are not JSON.
	FaultGarbage
	// FaultOversized answers with a well-formed reply line of Fault.Size bytes
	// (default 16 MiB), streamed without being held in memory.
	FaultOversized
	// FaultWrongSyncID answers guest-sync and guest-sync-delimited with an id
	// other than the one asked for.
	FaultWrongSyncID
	// FaultDisconnect writes the first half of the reply and closes the
	// connection (passthrough: returns an error wrapping
	// guestagent.ErrDisconnected).
	FaultDisconnect
)

var faultNames = [...]string{"none", "slow", "silent", "garbage", "oversized", "wrong-sync-id", "disconnect"}

func (m FaultMode) String() string {
	if m >= 0 && int(m) < len(faultNames) {
		return faultNames[m]
	}
	return "FaultMode(" + strconv.Itoa(int(m)) + ")"
}

// Fault describes misbehaviour. The zero value is no fault.
type Fault struct {
	Mode FaultMode
	// Delay is FaultSlow's delay.
	Delay time.Duration
	// Size is the reply size of FaultGarbage and FaultOversized.
	Size int
	// Commands limits the fault to these commands. Empty means every command
	// except guest-sync and guest-sync-delimited, or, for FaultWrongSyncID,
	// exactly those two.
	Commands []string
	// Count is how many replies the fault spoils before it clears; 0 means
	// until changed.
	Count int
}

// faultApplies reports whether the current fault spoils a reply to cmd.
// Call with s.mu held.
func (s *Server) faultApplies(cmd string) bool {
	f := s.fault
	if f.Mode == FaultNone || cmd == "" {
		return false
	}
	if len(f.Commands) > 0 {
		return slices.Contains(f.Commands, cmd)
	}
	isSync := cmd == guestagent.CmdSync || cmd == guestagent.CmdSyncDelimited
	if f.Mode == FaultWrongSyncID {
		return isSync
	}
	return !isSync
}

// spendFault counts one spoiled reply. Call with s.mu held.
func (s *Server) spendFault() {
	if s.fault.Count <= 0 {
		return
	}
	s.fault.Count--
	if s.fault.Count == 0 {
		s.fault = Fault{}
	}
}

// takeFault returns the fault to apply to a reply to cmd (other than the
// sync-id fault, applied while dispatching) and counts it.
func (s *Server) takeFault(cmd string) Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.faultApplies(cmd) || s.fault.Mode == FaultWrongSyncID {
		return Fault{}
	}
	f := s.fault
	s.spendFault()
	return f
}

// errDisconnect ends a connection on purpose.
var errDisconnect = fmt.Errorf("qgaserver: %w (fault)", guestagent.ErrDisconnected)

// garbage is n bytes that no JSON parser accepts, ending in a newline.
func garbage(n int) []byte {
	if n <= 0 {
		n = 64
	}
	out := make([]byte, n)
	pattern := []byte("}{\x00\x01garbage\x7f]][[:,")
	for i := range out {
		out[i] = pattern[i%len(pattern)]
	}
	out[n-1] = '\n'
	return out
}

// writeOversized writes a valid reply line of about n bytes (default 16 MiB)
// in small chunks.
func writeOversized(w io.Writer, n int) error {
	if n <= 0 {
		n = 16 << 20
	}
	const head, tail = `{"return": "`, "\"}\n"
	if _, err := io.WriteString(w, head); err != nil {
		return err
	}
	chunk := bytes.Repeat([]byte("A"), 32<<10)
	for left := n - len(head) - len(tail); left > 0; {
		c := min(left, len(chunk))
		if _, err := w.Write(chunk[:c]); err != nil {
			return err
		}
		left -= c
	}
	_, err := io.WriteString(w, tail)
	return err
}
