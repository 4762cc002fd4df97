package guestagent

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Sanitize makes a guest-supplied string safe to store in status or print:
// invalid UTF-8 and control or format characters (including bidi overrides)
// become U+FFFD, and the result is cut to at most maxBytes bytes on a rune
// boundary, with "…" marking a cut. maxBytes <= 0 means no cut.
func Sanitize(s string, maxBytes int) string {
	if isClean(s) && (maxBytes <= 0 || len(s) <= maxBytes) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !safeRune(r) {
			r = utf8.RuneError
		}
		if maxBytes > 0 && b.Len()+utf8.RuneLen(r) > maxBytes {
			return cutWithEllipsis(b.String(), maxBytes)
		}
		b.WriteRune(r)
	}
	return b.String()
}

func isClean(s string) bool {
	for _, r := range s {
		if !safeRune(r) {
			return false
		}
	}
	return true
}

// cutWithEllipsis shortens prefix so that it plus "…" fits in maxBytes.
func cutWithEllipsis(prefix string, maxBytes int) string {
	const ellipsis = "…"
	if maxBytes < 2*len(ellipsis) {
		return prefix // too short to spend on the marker
	}
	for len(prefix)+len(ellipsis) > maxBytes {
		_, size := utf8.DecodeLastRuneInString(prefix)
		prefix = prefix[:len(prefix)-size]
	}
	return prefix + ellipsis
}

func safeRune(r rune) bool {
	return r != utf8.RuneError && !unicode.IsControl(r) && !unicode.Is(unicode.Cf, r)
}
