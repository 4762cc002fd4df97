package node

import (
	"errors"
	"net/netip"
	"strings"

	"github.com/virtkit/virtkit/domain"
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

// maskHost replaces absolute paths and IP addresses in s.
func maskHost(s string) string {
	const delims = " \t\n'\"()[]=,:"
	var b strings.Builder
	for i := 0; i < len(s); {
		switch {
		case s[i] == '/' && (i == 0 || strings.IndexByte(delims, s[i-1]) >= 0):
			j := i + 1
			for j < len(s) && strings.IndexByte(delims, s[j]) < 0 {
				j++
			}
			b.WriteString("<node path>")
			i = j
		case isAddrByte(s[i]) && (i == 0 || !isAddrByte(s[i-1])):
			j := i
			for j < len(s) && isAddrByte(s[j]) {
				j++
			}
			tok := strings.TrimRight(s[i:j], ".:")
			if tok == "" {
				b.WriteByte(s[i])
				i++
				continue
			}
			if _, err := netip.ParseAddr(tok); err == nil {
				b.WriteString("<address>")
			} else if _, err := netip.ParseAddrPort(tok); err == nil {
				b.WriteString("<address>")
			} else {
				b.WriteString(tok)
			}
			i += len(tok)
		default:
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// isAddrByte reports whether c may be part of an IPv4 address and port.
func isAddrByte(c byte) bool { return c == '.' || c == ':' || (c >= '0' && c <= '9') }
