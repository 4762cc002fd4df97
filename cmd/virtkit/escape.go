package main

import "github.com/virtkit/virtkit/cmd/virtkit/internal/term"

// The CLI's names for package term's escaping (see there).

func unsafeRune(r rune) bool { return term.UnsafeRune(r) }

func esc(s string) string { return term.Esc(s) }

func escapeJSON(data []byte) []byte { return term.EscapeJSON(data) }

func escLines(s string) string { return term.EscLines(s) }

func yamlOut(v any) ([]byte, error) { return term.YAML(v) }

// jsonEscaper passes encoding/json output through escapeJSON.
type jsonEscaper = term.JSONEscaper
