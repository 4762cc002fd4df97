package apiserver

import (
	"errors"
	"net"
	"sync"
	"time"
)

// ErrOptions wraps every error NewGeneric returns for bad options.
var ErrOptions = errors.New("apiserver: bad options")

// Bounds by default, as kube-apiserver's.
const (
	// DefaultMaxRequestBytes bounds a request body
	// (GenericOptions.MaxRequestBytes).
	DefaultMaxRequestBytes = 3 << 20
	// DefaultMaxConnections bounds the connections open at once
	// (GenericOptions.MaxConnections); a connection over the bound is
	// closed as soon as it is accepted.
	DefaultMaxConnections = 4096
)

// shutdownGrace is how long Serve waits for requests to finish once its
// context ends before it closes the connections (watches never finish).
const shutdownGrace = 2 * time.Second

// limitListener closes the connections it accepts over max open at once.
type limitListener struct {
	net.Listener
	mu   sync.Mutex
	open int
	max  int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		if l.open >= l.max {
			l.mu.Unlock()
			_ = c.Close()
			continue
		}
		l.open++
		l.mu.Unlock()
		return &limitConn{Conn: c, l: l}, nil
	}
}

type limitConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *limitConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.l.mu.Lock()
		c.l.open--
		c.l.mu.Unlock()
	})
	return err
}
