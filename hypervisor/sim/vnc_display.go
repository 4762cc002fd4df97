package sim

import (
	"sync"

	"github.com/virtkit/virtkit/hypervisor"
)

// display is a running domain's VNC display, as QEMU has one per guest:
// one screen and one session of the simulated shell behind it, shared by
// every viewer. It is made when the first viewer connects (the screen
// then shows the boot messages and a prompt, as a booted guest's would),
// lives as long as the domain runs on its host and moves with a live
// migration: a viewer on the target sees the screen the source showed,
// with the line being typed.
type display struct {
	term *terminal
	mu   sync.Mutex // serializes input: the shell, then the screen
	sh   *shell
}

// newDisplay is a display showing a new session of the shell.
func newDisplay(info hypervisor.DomainInfo) *display {
	d := &display{term: newTerminal(), sh: newShell(info)}
	_, _ = d.term.Write([]byte(d.sh.banner()))
	return d
}

// Write types keys into the shell; its answer goes to the screen. It
// never fails.
func (d *display) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if out := d.sh.input(p); len(out) > 0 {
		_, _ = d.term.Write(out)
	}
	return len(p), nil
}

// displayState is what a display carries across a live migration: the
// screen (as guest memory would hold it) and the shell's line being
// typed.
type displayState struct {
	// Screen holds the termRows x termCols character cells, row by row.
	Screen  []byte `json:"screen"`
	CursorX int    `json:"cursorX"`
	CursorY int    `json:"cursorY"`
	Escape  int    `json:"escape,omitempty"`
	Line    []byte `json:"line,omitempty"`
	LastCR  bool   `json:"lastCR,omitempty"`
}

// state is the display's state to migrate; nil for no display (nobody
// looked at it: the target makes a new one when asked).
func (d *display) state() *displayState {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.term
	t.mu.Lock()
	defer t.mu.Unlock()
	st := &displayState{Screen: make([]byte, 0, termRows*termCols), CursorX: t.x, CursorY: t.y, Escape: t.esc,
		Line: append([]byte(nil), d.sh.line...), LastCR: d.sh.lastCR}
	for y := range t.cells {
		st.Screen = append(st.Screen, t.cells[y][:]...)
	}
	return st
}

// restoreDisplay is the display a migrated guest arrives with: st's
// screen and line, or a new display when st is nil or malformed (a peer
// in another process sent it).
func restoreDisplay(st *displayState, info hypervisor.DomainInfo) *display {
	if st == nil || len(st.Screen) != termRows*termCols || len(st.Line) > maxConsoleLine ||
		st.CursorX < 0 || st.CursorX > termCols || st.CursorY < 0 || st.CursorY >= termRows || st.Escape < 0 || st.Escape > 2 {
		return newDisplay(info)
	}
	d := &display{term: newTerminal(), sh: newShell(info)}
	t := d.term
	for y := range t.cells {
		copy(t.cells[y][:], st.Screen[y*termCols:(y+1)*termCols])
	}
	t.x, t.y, t.esc = st.CursorX, st.CursorY, st.Escape
	d.sh.line = append(d.sh.line, st.Line...)
	d.sh.lastCR = st.LastCR
	return d
}
