package term

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// UnsafeRune reports runes a terminal may act on or that hide or reorder
// text: C0 and C1 controls, DEL, and format characters (bidi overrides and
// isolates, zero-width characters).
func UnsafeRune(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

// Esc makes an untrusted string (an object name, a message quoting user
// input) safe to print on a terminal: every unsafe rune is written as a Go
// escape (\x1b, \u202e) and every invalid UTF-8 byte as \xNN, so what the
// user sees is what the string holds.
func Esc(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || UnsafeRune(r) {
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
		case r < 0x80 && UnsafeRune(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case UnsafeRune(r) && r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		case UnsafeRune(r):
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// EscapeJSON rewrites encoding/json output so that no string in it holds a
// rune a terminal may act on: encoding/json escapes C0 controls but writes
// DEL, C1 controls and bidi overrides as they are. Such runes occur only
// inside strings, so each becomes a \u escape (a surrogate pair beyond the
// BMP) and the JSON means the same.
func EscapeJSON(data []byte) []byte {
	if !bytes.ContainsFunc(data, UnsafeRune) {
		return data
	}
	out := make([]byte, 0, len(data)+64)
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		if !UnsafeRune(r) || r < 0x20 && (r == '\n' || r == '\t' || r == '\r' || r == ' ') {
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

// JSONEscaper is an io.Writer that passes encoding/json output through
// EscapeJSON.
type JSONEscaper struct{ W io.Writer }

func (e JSONEscaper) Write(p []byte) (int, error) {
	if _, err := e.W.Write(EscapeJSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// EscLines is Esc for text of several lines: the line breaks stay.
func EscLines(s string) string {
	lines := strings.Split(s, "\n")
	for i := range lines {
		lines[i] = Esc(lines[i])
	}
	return strings.Join(lines, "\n")
}

// YAML encodes v as YAML with no rune a terminal may act on in it.
// YAML's emitters write bidi overrides, zero-width characters and U+0085 as
// they are (the YAML spec counts them printable), so when v holds one it is
// encoded again from its escaped JSON: every scalar holding such a rune is
// written double-quoted, where a \u escape means the same rune, and the
// rune as its escape. Clean values encode as yaml.Marshal does.
func YAML(v any) ([]byte, error) {
	// Decided on the JSON, where encoding/json has escaped newlines and
	// tabs: yaml.Marshal itself turns U+0085 into a space.
	j, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if !bytes.ContainsFunc(j, UnsafeRune) {
		return yaml.Marshal(v)
	}
	// Newlines and tabs are YAML's own structure and whitespace.
	unsafe := func(r rune) bool { return r != '\n' && r != '\t' && UnsafeRune(r) }
	var doc yamlv3.Node
	if err := yamlv3.Unmarshal(EscapeJSON(j), &doc); err != nil {
		return nil, err
	}
	var restyle func(n *yamlv3.Node)
	restyle = func(n *yamlv3.Node) {
		n.Style = 0 // block style, plain where the value allows
		if n.Kind == yamlv3.ScalarNode && strings.ContainsFunc(n.Value, unsafe) {
			n.Style = yamlv3.DoubleQuotedStyle
		}
		for _, c := range n.Content {
			restyle(c)
		}
	}
	restyle(&doc)
	var b bytes.Buffer
	enc := yamlv3.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	var out strings.Builder
	for _, r := range b.String() {
		switch {
		case !unsafe(r):
			out.WriteRune(r)
		case r <= 0xffff:
			fmt.Fprintf(&out, `\u%04x`, r)
		default:
			fmt.Fprintf(&out, `\U%08x`, r)
		}
	}
	return []byte(out.String()), nil
}
