package node

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMaskHost(t *testing.T) {
	tests := []struct{ in, want string }{
		{"open /var/lib/virtkit/x: denied", "open <node path>: denied"},
		{"'/run/virtkit/a.sock'", "'<node path>'"},
		{"dial 10.0.0.5:5000: refused", "dial <address>: refused"},
		{"at 10.0.0.5.", "at <address>."},
		{"node1:10.0.0.5", "node1:<address>"},
		{"id10.0.0.5 ip10.0.0.6", "id<address> ip<address>"},
		{"spec.volumes[0].name: a/b not supported", "spec.volumes[0].name: a/b not supported"},
		{"version 1.2 at :: and 8080", "version 1.2 at :: and 8080"},
		{"", ""},
		// IPv6.
		{"dial fd00:10::5 refused", "dial <address> refused"},
		{"dial [fd00:10::5]:5000: refused", "dial <address>: refused"},
		{"dial tcp [::1]:22: connection refused", "dial tcp <address>: connection refused"},
		{"listening on [::1]", "listening on <address>"},
		{"from ::1, to ::ffff:10.0.0.5", "from <address>, to <address>"},
		{"link fe80::1%eth0 down", "link <address> down"},
		{"link [fe80::1%eth0]:49152 down", "link <address> down"},
		{"prefix 2001:db8:: and 2001:db8::1.", "prefix <address> and <address>."},
		{"at 2001:0db8:0000:0000:0000:ff00:0042:8329:", "at <address>:"},
		{"'fd00::5'", "'<address>'"},
		// URLs: libvirt and migration URIs.
		{"unable to connect to qemu+tcp://10.0.0.6:16509/system: refused", "unable to connect to qemu+tcp://<address>: refused"},
		{"migrate to tcp://[fd00::6]:49152, failed", "migrate to tcp://<address>, failed"},
		// Not addresses.
		{"12:30:45 deadbeef cafe a:b 1.2.3", "12:30:45 deadbeef cafe a:b 1.2.3"},
		{"3f2a-4e1b uuid", "3f2a-4e1b uuid"},
		{"Failed: bad", "Failed: bad"},
		{"spec.domain.devices.disks[1]", "spec.domain.devices.disks[1]"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			assert.Equal(t, tt.want, maskHost(tt.in))
		})
	}
}

// maskHost takes any text: it never panics and leaves no IP address it
// can parse at a token boundary.
func FuzzMaskHost(f *testing.F) {
	for _, s := range []string{"dial [fe80::1%eth0]:22: x", "qemu+tcp://10.0.0.1/system", "/a/b:c", "[", "[::", "a://", "1.2.3.4:", "::1%", "x%y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		out := maskHost(s)
		for _, tok := range strings.FieldsFunc(out, func(r rune) bool { return strings.ContainsRune(" \t\n'\"()[],=<>/", r) }) {
			if _, err := netip.ParseAddr(strings.TrimRight(tok, ".:")); err == nil && strings.ContainsAny(tok, "123456789") && !strings.Contains(s, "<") {
				if strings.Contains(tok, ".") || strings.Count(tok, ":") >= 2 {
					t.Errorf("maskHost(%q) = %q leaves address %q", s, out, tok)
				}
			}
		}
	})
}
