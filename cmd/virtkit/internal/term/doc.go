// Package term makes untrusted text (object names, messages, whole
// objects) safe to print on a terminal, for every command of the virtkit
// CLI: runes a terminal may act on, or that hide or reorder text, are
// written as escapes, in plain text, JSON and YAML alike.
package term
