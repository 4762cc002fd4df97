package node

import (
	"errors"
	"net/netip"
	"strings"

	"github.com/virtkit/virtkit/domain"
	"github.com/virtkit/virtkit/store"
)

// tenantMessager is an error that says what a tenant may read about it (a
// resolver's pull failure, say); its Error() is for the node's log.
type tenantMessager interface {
	TenantMessage() string
}

// tenantMessage is what a VMI's status and events say about err: the
// error's own TenantMessage when it has one; the text of an error about the
// VMI's spec (unsupported, a missing config source, a feature the node
// lacks) with host paths and addresses masked; otherwise fallback. The
// error itself, which may name the node's state directories, sockets, users
// or addresses, belongs in the node's log.
func tenantMessage(err error, fallback string) string {
	var m tenantMessager
	if errors.As(err, &m) {
		return m.TenantMessage()
	}
	if errors.Is(err, domain.ErrUnsupported) || errors.Is(err, domain.ErrConfigSourceMissing) || errors.Is(err, ErrNoVirtiofsd) {
		return maskHost(err.Error())
	}
	return fallback
}

// endpointMessage is what the endpoint answers about err, which the API
// server relays to the VMI's user: the endpoint's own refusals (no
// reachable guest address, with the addresses the guest reported; a VMI
// not on this node or not found) as they are, anything else (the
// hypervisor's console, VNC or dial errors, which can name the node's
// sockets and addresses) with host paths and addresses masked.
func endpointMessage(err error) string {
	if errors.Is(err, ErrNoGuestAddress) || errors.Is(err, ErrNotOnThisNode) || errors.Is(err, store.ErrNotFound) {
		return err.Error()
	}
	var m tenantMessager
	if errors.As(err, &m) {
		return m.TenantMessage()
	}
	return maskHost(err.Error())
}

// maskHost replaces absolute paths, URLs (a libvirt or migration URI) and
// IP addresses, IPv4 and IPv6 (with a zone, bracketed, with a port), in s.
func maskHost(s string) string {
	const delims = " \t\n'\"()[]=,:"
	var b strings.Builder
	for i := 0; i < len(s); {
		if n := urlLen(s, i); n > 0 {
			b.WriteString(s[i : i+strings.Index(s[i:], "://")+3])
			b.WriteString("<address>")
			i += n
			continue
		}
		if n := bracketedAddrLen(s, i); n > 0 {
			b.WriteString("<address>")
			i += n
			continue
		}
		switch {
		case s[i] == '/' && (i == 0 || strings.IndexByte(delims, s[i-1]) >= 0):
			j := i + 1
			for j < len(s) && strings.IndexByte(delims, s[j]) < 0 {
				j++
			}
			b.WriteString("<node path>")
			i = j
		case isAddrByte(s[i]) && (i == 0 || addrBoundary(s[i-1], s[i])):
			if n := addrLen(s, i); n > 0 {
				b.WriteString("<address>")
				i += n
				continue
			}
			b.WriteByte(s[i])
			i++
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// addrLen is the length of the IP address, with an optional zone or port,
// that starts at s[i], or 0.
func addrLen(s string, i int) int {
	j := i
	for j < len(s) && isAddrByte(s[j]) {
		j++
	}
	if j < len(s) && s[j] == '%' && strings.IndexByte(s[i:j], ':') >= 0 { // an IPv6 zone
		k := j + 1
		for k < len(s) && isZoneByte(s[k]) {
			k++
		}
		if k > j+1 {
			j = k
		}
	}
	// The longest address: "2001:db8::" keeps its colons, "at 10.0.0.5."
	// loses the full stop.
	for tok := s[i:j]; strings.ContainsAny(tok, "0123456789abcdefABCDEF"); tok = tok[:len(tok)-1] {
		if _, err := netip.ParseAddr(tok); err == nil {
			return len(tok)
		}
		if _, err := netip.ParseAddrPort(tok); err == nil {
			return len(tok)
		}
		if c := tok[len(tok)-1]; c != '.' && c != ':' {
			return 0
		}
	}
	return 0
}

// bracketedAddrLen is the length of "[IPv6]" or "[IPv6]:port" at s[i], or
// 0.
func bracketedAddrLen(s string, i int) int {
	if s[i] != '[' {
		return 0
	}
	end := strings.IndexByte(s[i:], ']')
	if end < 0 {
		return 0
	}
	if _, err := netip.ParseAddr(s[i+1 : i+end]); err != nil {
		return 0
	}
	n := end + 1
	if i+n+1 < len(s) && s[i+n] == ':' && s[i+n+1] >= '0' && s[i+n+1] <= '9' {
		n++
		for i+n < len(s) && s[i+n] >= '0' && s[i+n] <= '9' {
			n++
		}
	}
	return n
}

// urlLen is the length of the URL (scheme://...) that starts at s[i], or
// 0: it ends at white space, a quote, a closing parenthesis or a comma,
// and trailing punctuation is not part of it.
func urlLen(s string, i int) int {
	if !isSchemeByte(s[i]) || (i > 0 && isSchemeByte(s[i-1])) {
		return 0
	}
	j := i
	for j < len(s) && isSchemeByte(s[j]) {
		j++
	}
	if j == i || !strings.HasPrefix(s[j:], "://") {
		return 0
	}
	k := j + 3
	for k < len(s) && strings.IndexByte(" \t\n'\"),", s[k]) < 0 {
		k++
	}
	for k > j+3 && strings.IndexByte(".:;", s[k-1]) >= 0 { // the sentence's punctuation
		k--
	}
	return k - i
}

// isAddrByte reports whether c may be part of an IP address and port.
func isAddrByte(c byte) bool {
	return c == '.' || c == ':' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// addrBoundary reports whether an address may start at c after prev: not
// inside a number or a hex word, though a number may follow a letter
// ("node1:10.0.0.5" masks the address after the colon, not "de1:10.0.0.5";
// "id10.0.0.5" masks the address after the letters).
func addrBoundary(prev, c byte) bool {
	switch {
	case prev == '.' || prev == '%' || (prev >= '0' && prev <= '9'):
		return false
	case (prev >= 'a' && prev <= 'f') || (prev >= 'A' && prev <= 'F'):
		return c >= '0' && c <= '9'
	}
	return true
}

func isZoneByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isSchemeByte(c byte) bool {
	return c == '+' || c == '-' || c == '.' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}
