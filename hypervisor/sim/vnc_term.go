package sim

import "sync"

// Text console geometry of the simulated display: a VGA text mode grid of
// 8x16 character cells.
const (
	termCols   = 80
	termRows   = 25
	cellWidth  = 8
	cellHeight = 16
)

// terminal is the character grid a simulated display shows: the serial
// console's output interpreted as a plain terminal would (printable ASCII,
// CR, LF, backspace, tab; escape sequences are consumed and ignored).
// Readers wait on changed for the next change.
type terminal struct {
	mu      sync.Mutex
	cells   [termRows][termCols]byte
	x, y    int
	esc     int // 0: none, 1: after ESC, 2: in a CSI sequence
	changed chan struct{}
}

func newTerminal() *terminal {
	t := &terminal{changed: make(chan struct{})}
	for y := range t.cells {
		for x := range t.cells[y] {
			t.cells[y][x] = ' '
		}
	}
	return t
}

// screen is a snapshot of the grid: the characters and the cursor.
type screen struct {
	cells   [termRows][termCols]byte
	cursorX int
	cursorY int
}

// snapshot returns the grid and a channel closed at its next change.
func (t *terminal) snapshot() (screen, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return screen{cells: t.cells, cursorX: t.x, cursorY: t.y}, t.changed
}

// Write interprets console output; it never fails.
func (t *terminal) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, b := range p {
		t.put(b)
	}
	close(t.changed)
	t.changed = make(chan struct{})
	return len(p), nil
}

func (t *terminal) put(b byte) {
	switch t.esc {
	case 1:
		t.esc = 0
		if b == '[' {
			t.esc = 2
		}
		return
	case 2:
		if b >= 0x40 && b <= 0x7e {
			t.esc = 0
		}
		return
	}
	switch {
	case b == 0x1b:
		t.esc = 1
	case b == '\r':
		t.x = 0
	case b == '\n':
		t.lineFeed()
	case b == '\b':
		if t.x > 0 {
			t.x--
		}
	case b == '\t':
		t.x = min((t.x/8+1)*8, termCols-1)
	case b < 0x20 || b == 0x7f:
		// Other control characters (bell, ...) show nothing.
	default:
		if t.x >= termCols {
			t.x = 0
			t.lineFeed()
		}
		t.cells[t.y][t.x] = b
		t.x++
	}
}

func (t *terminal) lineFeed() {
	if t.y < termRows-1 {
		t.y++
		return
	}
	copy(t.cells[:], t.cells[1:])
	for x := range t.cells[termRows-1] {
		t.cells[termRows-1][x] = ' '
	}
}
