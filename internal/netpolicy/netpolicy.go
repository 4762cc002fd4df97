package netpolicy

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"syscall"
	"time"
)

// Errors of the policy.
var (
	// ErrForbidden: the address is one a tenant may not make the node dial.
	ErrForbidden = errors.New("address not allowed for tenant connections")
	// ErrUnenforceable: a caller's HTTP transport cannot be held to the
	// policy.
	ErrUnenforceable = errors.New("cannot enforce the address policy")
)

// metadata is the cloud instance-metadata address (also link-local).
var metadata = netip.MustParseAddr("169.254.169.254")

// Policy is the address policy. The zero value refuses the default set.
type Policy struct {
	// Allowed are networks dialled even when the default set refuses
	// them (an operator's in-cluster mirror on loopback, tests).
	Allowed []netip.Prefix
	// LocalAddrs returns the node's own addresses; nil reads the host's
	// interfaces.
	LocalAddrs func() ([]netip.Addr, error)
}

// Check returns nil when ip may be dialled, else an error wrapping
// ErrForbidden that says why.
func (p Policy) Check(ip netip.Addr) error {
	ip = ip.Unmap().WithZone("")
	for _, n := range p.Allowed {
		if n.Contains(ip) {
			return nil
		}
	}
	why := ""
	switch {
	case !ip.IsValid():
		why = "invalid"
	case ip == metadata:
		why = "the cloud metadata address"
	case ip.IsLoopback():
		why = "loopback"
	case ip.IsUnspecified() || ip.Is4() && ip.As4()[0] == 0:
		why = "unspecified"
	case ip.IsLinkLocalUnicast():
		why = "link-local"
	case ip.IsMulticast() || ip.Is4() && ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}):
		why = "multicast or broadcast"
	}
	if why == "" {
		local, err := p.local()
		if err != nil {
			return fmt.Errorf("%w: %s: the node's addresses: %w", ErrForbidden, ip, err)
		}
		for _, l := range local {
			if l.Unmap().WithZone("") == ip {
				why = "an address of the node itself"
				break
			}
		}
	}
	if why != "" {
		return fmt.Errorf("%w: %s is %s", ErrForbidden, ip, why)
	}
	return nil
}

func (p Policy) local() ([]netip.Addr, error) {
	if p.LocalAddrs != nil {
		return p.LocalAddrs()
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	out := make([]netip.Addr, 0, len(addrs))
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if ip, ok := netip.AddrFromSlice(n.IP); ok {
				out = append(out, ip)
			}
		}
	}
	return out, nil
}

// CheckAddress checks a "host:port" or a bare host that must be an IP
// literal.
func (p Policy) CheckAddress(address string) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		host = address
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return fmt.Errorf("%w: %q is not an IP address", ErrForbidden, address)
	}
	return p.Check(ip)
}

// Control is a net.Dialer Control function: it runs after name
// resolution, on the address about to be connected.
func (p Policy) Control(_, address string, _ syscall.RawConn) error {
	return p.CheckAddress(address)
}

// Dialer returns a copy of d (nil: a zero Dialer) whose connections obey
// the policy.
func (p Policy) Dialer(d *net.Dialer) *net.Dialer {
	var c net.Dialer
	if d != nil {
		c = *d
	}
	prev := c.Control
	c.ControlContext = nil
	c.Control = func(network, address string, rc syscall.RawConn) error {
		if err := p.Control(network, address, rc); err != nil {
			return err
		}
		if prev != nil {
			return prev(network, address, rc)
		}
		return nil
	}
	return &c
}

// Transport returns a clone of t (nil: of http.DefaultTransport, dialling
// through the policy) whose
// connections obey the policy. A transport without its own DialContext
// dials through the policy (the resolved address is checked before
// connecting); one with its own DialContext (a proxy dialer, a tunnel)
// has each connection's remote address checked once connected, and a
// refused one closed before anything is sent.
func (p Policy) Transport(t *http.Transport) *http.Transport {
	if t == nil {
		t = http.DefaultTransport.(*http.Transport).Clone()
		t.DialContext = nil // the policy dials
	} else {
		t = t.Clone()
	}
	prev := t.DialContext
	if prev == nil {
		t.DialContext = p.Dialer(&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	} else {
		t.DialContext = func(ctx context.Context, network, address string) (net.Conn, error) {
			c, err := prev(ctx, network, address)
			if err != nil {
				return nil, err
			}
			if err := p.CheckAddress(c.RemoteAddr().String()); err != nil {
				c.Close()
				return nil, &net.OpError{Op: "dial", Net: network, Addr: c.RemoteAddr(), Err: err}
			}
			return c, nil
		}
	}
	if t.DialTLSContext != nil {
		prevTLS := t.DialTLSContext
		t.DialTLSContext = func(ctx context.Context, network, address string) (net.Conn, error) {
			c, err := prevTLS(ctx, network, address)
			if err != nil {
				return nil, err
			}
			if err := p.CheckAddress(c.RemoteAddr().String()); err != nil {
				c.Close()
				return nil, &net.OpError{Op: "dial", Net: network, Addr: c.RemoteAddr(), Err: err}
			}
			return c, nil
		}
	}
	return t
}

// maxRedirects is net/http's default limit.
const maxRedirects = 10

// Client returns a copy of c (nil: a client over http.DefaultTransport)
// whose connections obey the policy (see Transport; c's transport must be
// an *http.Transport or nil), and whose redirects must be http or https to
// a host the policy allows when it is an IP literal (a name is checked
// when it is dialled).
func (p Policy) Client(c *http.Client) (*http.Client, error) {
	var out http.Client
	if c != nil {
		out = *c
	}
	switch rt := out.Transport.(type) {
	case nil:
		out.Transport = p.Transport(nil)
	case *http.Transport:
		out.Transport = p.Transport(rt)
	default:
		return nil, fmt.Errorf("%w: a transport of type %T cannot be held to the address policy: use an *http.Transport", ErrUnenforceable, rt)
	}
	prev := out.CheckRedirect
	out.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if err := p.CheckURL(req.URL); err != nil {
			return fmt.Errorf("redirect: %w", err)
		}
		if prev != nil {
			return prev(req, via)
		}
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		return nil
	}
	return &out, nil
}

// RoundTripper returns rt (nil: http.DefaultTransport) held to the policy;
// it must be an *http.Transport.
func (p Policy) RoundTripper(rt http.RoundTripper) (http.RoundTripper, error) {
	switch t := rt.(type) {
	case nil:
		return p.Transport(nil), nil
	case *http.Transport:
		return p.Transport(t), nil
	}
	return nil, fmt.Errorf("%w: a transport of type %T cannot be held to the address policy: use an *http.Transport", ErrUnenforceable, rt)
}

// CheckURL refuses a URL that is not http or https, or whose host is an IP
// literal the policy refuses.
func (p Policy) CheckURL(u *url.URL) error {
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%w: scheme %q: want http or https", ErrForbidden, u.Scheme)
	}
	if ip, err := netip.ParseAddr(u.Hostname()); err == nil {
		return p.Check(ip)
	}
	return nil
}

// DialContext dials through the policy with a zero Dialer.
func (p Policy) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	return p.Dialer(nil).DialContext(ctx, network, address)
}
