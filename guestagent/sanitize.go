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
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !safeRune(r) {
			clean = false
			break
		}
	}
	if clean && (maxBytes <= 0 || len(s) <= maxBytes) {
		return s
	}
	var b strings.Builder
	ellipsis := "…"
	if maxBytes > 0 && maxBytes < 2*len(ellipsis) {
		ellipsis = "" // too short to spend on the marker
	}
	limit := maxBytes - len(ellipsis)
	cut := false
	for _, r := range s {
		if !safeRune(r) {
			r = utf8.RuneError
		}
		if maxBytes > 0 && b.Len()+utf8.RuneLen(r) > limit {
			cut = true
			break
		}
		b.WriteRune(r)
	}
	if cut && maxBytes > 0 && len(s) <= maxBytes && b.Len() == len(s) {
		cut = false
	}
	if cut {
		b.WriteString(ellipsis)
	}
	return b.String()
}

func safeRune(r rune) bool {
	return r != utf8.RuneError && !unicode.IsControl(r) && !unicode.Is(unicode.Cf, r)
}
