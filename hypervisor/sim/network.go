package sim

import (
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/virtkit/virtkit/hypervisor"
)

// DefaultBandwidth is a link's bandwidth when Link.Bandwidth is 0:
// 10 GbE, 1.25 GB/s.
const DefaultBandwidth = 1_250_000_000

// Link is the migration path from one host to another.
type Link struct {
	// Bandwidth is the effective throughput in bytes per second
	// (0 = DefaultBandwidth). Concurrent migrations on a link share it
	// equally.
	Bandwidth uint64
	// Dips multiply the bandwidth for a while.
	Dips []Dip
}

// Dip multiplies a link's bandwidth by Factor (0..1) from At until
// At+Duration, measured from the start of each migration on the link.
type Dip struct {
	At, Duration time.Duration
	Factor       float64
}

// Validate checks the link; errors name the field.
func (l Link) Validate() error {
	for i, d := range l.Dips {
		field := fmt.Sprintf("link.dips[%d]", i)
		switch {
		case d.At < 0:
			return invalid(field+".at", fmt.Sprintf("%v is negative", d.At))
		case d.Duration < 0:
			return invalid(field+".duration", fmt.Sprintf("%v is negative", d.Duration))
		case d.Factor < 0 || d.Factor > 1 || math.IsNaN(d.Factor):
			return invalid(field+".factor", fmt.Sprintf("%v is outside 0..1", d.Factor))
		}
	}
	return nil
}

// capacity is the link's bandwidth at offset since a migration started.
func (l Link) capacity(since time.Duration) float64 {
	b := float64(l.Bandwidth)
	if b == 0 {
		b = DefaultBandwidth
	}
	for _, d := range l.Dips {
		if since >= d.At && since < d.At+d.Duration {
			b *= d.Factor
		}
	}
	return b
}

type linkState struct {
	link   Link
	active atomic.Int32 // migrations sharing the link
}

// Network joins simulated hosts so domains can migrate between them; the
// destination URI of a migration is the target host's name.
type Network struct {
	mu    sync.Mutex
	hosts map[string]*Host
	links map[[2]string]*linkState
	// mesh, when set, links every pair of hosts without an explicit link.
	mesh *Link
}

// NewNetwork returns an empty network: hosts can migrate between each
// other only along the links Connect or SetLink made.
func NewNetwork() *Network {
	return &Network{hosts: map[string]*Host{}, links: map[[2]string]*linkState{}}
}

// NewMeshNetwork returns an empty network on which every pair of hosts
// that joined it (Join, Connect or SetLink) is linked by link in both
// directions, each direction with its own capacity, unless SetLink gave
// that pair another link. Links are made when first used, so a mesh of
// many hosts costs nothing up front.
func NewMeshNetwork(link Link) (*Network, error) {
	if err := link.Validate(); err != nil {
		return nil, err
	}
	n := NewNetwork()
	l := link
	l.Dips = append([]Dip(nil), link.Dips...)
	n.mesh = &l
	return n, nil
}

// Join adds h to the network without linking it; on a mesh network
// ([NewMeshNetwork]) that links it to every other host.
func (n *Network) Join(h *Host) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if other, ok := n.hosts[h.Name()]; ok && other != h {
		return fmt.Errorf("host name %q is taken on this network: %w", h.Name(), hypervisor.ErrExists)
	}
	if err := h.join(n); err != nil {
		return err
	}
	n.hosts[h.Name()] = h
	return nil
}

// Connect joins a and b with link in both directions (each direction
// has its own capacity), adding the hosts to the network.
func (n *Network) Connect(a, b *Host, link Link) error {
	if err := n.SetLink(a, b, link); err != nil {
		return err
	}
	return n.SetLink(b, a, link)
}

// SetLink sets (or replaces, for later migrations) the link from one
// host to another.
func (n *Network) SetLink(from, to *Host, link Link) error {
	if err := link.Validate(); err != nil {
		return err
	}
	if from == to {
		return invalid("link", "a host cannot link to itself")
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, h := range []*Host{from, to} {
		if other, ok := n.hosts[h.Name()]; ok && other != h {
			return fmt.Errorf("host name %q is taken on this network: %w", h.Name(), hypervisor.ErrExists)
		}
		if err := h.join(n); err != nil {
			return err
		}
		n.hosts[h.Name()] = h
	}
	ls := &linkState{link: link}
	ls.link.Dips = append([]Dip(nil), link.Dips...)
	n.links[[2]string{from.Name(), to.Name()}] = ls
	return nil
}

func (h *Host) join(n *Network) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.network != nil && h.network != n {
		return fmt.Errorf("host %q is on another network: %w", h.Name(), hypervisor.ErrExists)
	}
	h.network = n
	return nil
}

// route finds the target host and the link to it.
func (n *Network) route(from *Host, to string) (*Host, *linkState, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	dst, ok := n.hosts[to]
	switch {
	case !ok:
		return nil, nil, invalid("params.destinationURI", fmt.Sprintf("no host %q on the network", to))
	case dst == from:
		return nil, nil, invalid("params.destinationURI", "migration to the same host")
	}
	ls, ok := n.links[[2]string{from.Name(), to}]
	if !ok && n.mesh != nil {
		ls = &linkState{link: *n.mesh}
		n.links[[2]string{from.Name(), to}] = ls
		ok = true
	}
	if !ok {
		return nil, nil, invalid("params.destinationURI", fmt.Sprintf("no link from %q to %q", from.Name(), to))
	}
	return dst, ls, nil
}
