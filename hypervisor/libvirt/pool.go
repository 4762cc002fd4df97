//go:build cgo && (libvirt || libvirt_dlopen)

package libvirt

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	lv "libvirt.org/go/libvirt"

	"github.com/virtkit/virtkit/hypervisor"
)

// maxIdleConns is how many spare connections a Hypervisor keeps open.
const maxIdleConns = 4

// connPool hands every call a connection of its own. libvirt's client
// (9.0) lets a call that waits on the daemon (a hung guest agent, a
// migration) hold up every other call on the same connection until it
// returns or the next keepalive message arrives; with one connection per
// concurrent call, one stuck guest cannot stall the others. Spare
// connections are kept for reuse; the event loop answers their keepalives.
type connPool struct {
	uri string
	log *slog.Logger

	mu     sync.Mutex
	closed bool
	idle   []*lv.Connect
}

func (p *connPool) get() (*lv.Connect, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, fmt.Errorf("libvirt %s: connection closed: %w", p.uri, hypervisor.ErrConnection)
	}
	if n := len(p.idle); n > 0 {
		c := p.idle[n-1]
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		return c, nil
	}
	p.mu.Unlock()
	c, err := lv.NewConnect(p.uri)
	if err != nil {
		return nil, fmt.Errorf("libvirt connect %s: %w", p.uri, connectError(err))
	}
	return c, nil
}

// put returns c after a call that ended with err; a connection the call
// found broken is closed, not reused.
func (p *connPool) put(c *lv.Connect, err error) {
	p.mu.Lock()
	if !p.closed && len(p.idle) < maxIdleConns && !errors.Is(translate(err), hypervisor.ErrConnection) {
		p.idle = append(p.idle, c)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	p.closeConn(c)
}

func (p *connPool) closeConn(c *lv.Connect) {
	if _, err := c.Close(); err != nil {
		p.log.Debug("libvirt close connection", "uri", p.uri, "err", err)
	}
}

// close closes the spare connections; ones in use close when returned.
func (p *connPool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle, p.closed = nil, true
	p.mu.Unlock()
	for _, c := range idle {
		p.closeConn(c)
	}
}
