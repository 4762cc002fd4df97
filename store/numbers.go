package store

import (
	"bytes"
	"fmt"
)

// MaxDecimalExponent bounds the decimal exponent of a number written in
// scientific notation in a stored value ("1e-999999999"). Decoding such a
// quantity (resource.Quantity rounds it with arbitrary precision) takes
// minutes of CPU for a dozen bytes; no real quantity needs more than a few
// dozen.
const MaxDecimalExponent = 1000

// checkExponents refuses data holding a JSON number, or a string whose
// whole content is a number, with a decimal exponent beyond
// MaxDecimalExponent. It is one linear pass without allocations that
// knows where JSON strings begin and end; strings are checked raw, as
// resource.Quantity's decoder reads them.
func checkExponents(data []byte) error {
	for i := 0; i < len(data); {
		c := data[i]
		switch {
		case c == '"':
			j := i + 1
			for j < len(data) && data[j] != '"' {
				if data[j] == '\\' {
					j++
				}
				j++
			}
			end := min(j, len(data))
			if err := checkNumber(data[i+1 : end]); err != nil {
				return err
			}
			i = end + 1
		case c == '-' || (c >= '0' && c <= '9'):
			j := i
			for j < len(data) && isNumberByte(data[j]) {
				j++
			}
			if err := checkNumber(data[i:j]); err != nil {
				return err
			}
			i = j
		default:
			i++
		}
	}
	return nil
}

func isNumberByte(c byte) bool {
	return (c >= '0' && c <= '9') || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// checkNumber reports tok if it is exactly [+-]digits[.digits](e|E)[+-]digits
// (after trimming spaces) with an exponent beyond MaxDecimalExponent.
func checkNumber(tok []byte) error {
	tok = bytes.TrimSpace(tok)
	k := 0
	if k < len(tok) && (tok[k] == '+' || tok[k] == '-') {
		k++
	}
	start := k
	for k < len(tok) && (isDigit(tok[k]) || tok[k] == '.') {
		k++
	}
	if k == start || k == len(tok) || (tok[k] != 'e' && tok[k] != 'E') {
		return nil
	}
	k++
	if k < len(tok) && (tok[k] == '+' || tok[k] == '-') {
		k++
	}
	expStart := k
	for k < len(tok) && isDigit(tok[k]) {
		k++
	}
	if k != len(tok) || k == expStart {
		return nil
	}
	exp := bytes.TrimLeft(tok[expStart:], "0")
	if len(exp) > 4 || (len(exp) == 4 && string(exp) > "1000") {
		return fmt.Errorf("number %q has a decimal exponent beyond ±%d", bounded(string(tok)), MaxDecimalExponent)
	}
	return nil
}
