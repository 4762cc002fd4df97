package netpolicy_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/virtkit/virtkit/internal/netpolicy"
)

func TestCheck(t *testing.T) {
	node := netip.MustParseAddr("10.1.2.3")
	p := netpolicy.Policy{LocalAddrs: func() ([]netip.Addr, error) { return []netip.Addr{node}, nil }}
	allowLo := p
	allowLo.Allowed = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	tests := []struct {
		ip      string
		policy  netpolicy.Policy
		allowed bool
	}{
		{"93.184.216.34", p, true},
		{"10.244.1.5", p, true},
		{"2001:db8::1", p, true},
		{"127.0.0.1", p, false},
		{"127.8.9.10", p, false},
		{"::1", p, false},
		{"::ffff:127.0.0.1", p, false},
		{"169.254.169.254", p, false},
		{"169.254.1.1", p, false},
		{"fe80::1", p, false},
		{"0.0.0.0", p, false},
		{"0.1.2.3", p, false},
		{"::", p, false},
		{"224.0.0.1", p, false},
		{"255.255.255.255", p, false},
		{"10.1.2.3", p, false},
		{"127.0.0.1", allowLo, true},
		{"::1", allowLo, false},
		{"169.254.169.254", allowLo, false},
	}
	for _, tt := range tests {
		t.Run(tt.ip, func(t *testing.T) {
			err := tt.policy.Check(netip.MustParseAddr(tt.ip))
			if tt.allowed {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, netpolicy.ErrForbidden)
		})
	}
}

// The check runs on the resolved address: a name that resolves to
// loopback is refused like the literal.
func TestDialerChecksResolvedAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	_, err = netpolicy.Policy{}.DialContext(context.Background(), "tcp", net.JoinHostPort("localhost", port))
	require.ErrorIs(t, err, netpolicy.ErrForbidden)
	c, err := netpolicy.Policy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}}.DialContext(context.Background(), "tcp", ln.Addr().String())
	require.NoError(t, err)
	c.Close()
}

// A redirect from an allowed host to a refused one fails, by IP literal
// (CheckRedirect) and by name (at dial time).
func TestClientRedirects(t *testing.T) {
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("secret")) }))
	defer target.Close()
	_, port, _ := net.SplitHostPort(target.Listener.Addr().String())
	ln, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no 127.0.0.2 on this host: %v", err)
	}
	redirector := &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("to") == "" {
			_, _ = w.Write([]byte("ok"))
			return
		}
		http.Redirect(w, r, "http://"+r.URL.Query().Get("to")+"/", http.StatusFound)
	})}}
	redirector.Start()
	defer redirector.Close()
	c, err := netpolicy.Policy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.2/32")}}.Client(nil)
	require.NoError(t, err)
	for _, to := range []string{"127.0.0.1:" + port, "localhost:" + port, "169.254.169.254"} {
		t.Run(to, func(t *testing.T) {
			resp, err := c.Get(redirector.URL + "/?to=" + to)
			if err == nil {
				resp.Body.Close()
			}
			require.ErrorIs(t, err, netpolicy.ErrForbidden)
		})
	}
	resp, err := c.Get(redirector.URL + "/?to=" + ln.Addr().String())
	require.NoError(t, err, "a redirect within the allowed network is followed")
	resp.Body.Close()
}

func TestClientRefusesOpaqueTransport(t *testing.T) {
	_, err := netpolicy.Policy{}.Client(&http.Client{Transport: roundTripFunc(nil)})
	assert.ErrorIs(t, err, netpolicy.ErrUnenforceable)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
