package sim

import (
	"context"
	"errors"
	"maps"
	"sync"
)

// Virtiofs shares on the simulated host. A real node starts a virtiofsd
// per share and QEMU connects to its socket; the simulator has no QEMU to
// connect, so it models what such a backend exposes instead: the share's
// tag and the host directory a guest mounting that tag sees. No process
// runs and no socket is made. Shares end with StopVirtiofs, which the node
// calls when it removes the domain.

// virtiofsShares are the shares served, per domain: tag → directory.
type virtiofsShares struct {
	mu    sync.Mutex
	byDom map[string]map[string]string
}

// ServeVirtiofs serves dir as the virtiofs share tag of domain name: what
// the simulated guest of that domain sees when it mounts tag.
func (h *Host) ServeVirtiofs(ctx context.Context, name, tag, dir string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if name == "" || tag == "" || dir == "" {
		return errors.New("sim: virtiofs share needs a domain, a tag and a directory")
	}
	s := &h.shares
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.byDom == nil {
		s.byDom = map[string]map[string]string{}
	}
	if s.byDom[name] == nil {
		s.byDom[name] = map[string]string{}
	}
	s.byDom[name][tag] = dir
	return nil
}

// StopVirtiofs ends every share of domain name.
func (h *Host) StopVirtiofs(name string) {
	h.shares.mu.Lock()
	delete(h.shares.byDom, name)
	h.shares.mu.Unlock()
}

// VirtiofsShares returns the shares of domain name, tag → directory.
func (h *Host) VirtiofsShares(name string) map[string]string {
	h.shares.mu.Lock()
	defer h.shares.mu.Unlock()
	return maps.Clone(h.shares.byDom[name])
}
