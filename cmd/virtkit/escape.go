package main

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// unsafeRune reports runes a terminal may act on or that hide or reorder
// text: C0 and C1 controls, DEL, and format characters (bidi overrides and
// isolates, zero-width characters).
func unsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// esc makes an untrusted string (an object name, a message quoting user
// input) safe to print on a terminal: every unsafe rune is written as a Go
// escape (\x1b, \u202e) and every invalid UTF-8 byte as \xNN, so what the
// user sees is what the string holds.
func esc(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r < 0x80 && unsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r) && r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// escapeJSON rewrites encoding/json output so that no string in it holds a
// rune a terminal may act on: encoding/json escapes C0 controls but writes
// DEL, C1 controls and bidi overrides as they are. Such runes occur only
// inside strings, so each becomes a \u escape (a surrogate pair beyond the
// BMP) and the JSON means the same.
func escapeJSON(data []byte) []byte {
	if !bytes.ContainsFunc(data, unsafeRune) {
		return data
	}
	out := make([]byte, 0, len(data)+64)
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if !unsafeRune(r) || r < 0x20 && (r == '\n' || r == '\t' || r == '\r' || r == ' ') {
			out = append(out, data[i:i+size]...)
			i += size
			continue
		}
		if r1, r2 := utf16.EncodeRune(r); r1 != unicode.ReplacementChar {
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		} else {
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += size
	}
	return out
}

// jsonEscaper is an io.Writer that passes encoding/json output through
// escapeJSON.
type jsonEscaper struct{ w io.Writer }

func (e jsonEscaper) Write(p []byte) (int, error) {
	if _, err := e.w.Write(escapeJSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// escLines is esc for text of several lines: the line breaks stay.
func escLines(s string) string {
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = esc(lines[i])
	}
	return strings.Join(lines, "\n")
}
