package virtkit

import (
	"bytes"
	"fmt"
)

// MaxDecimalExponent bounds the decimal exponent of a number written in
// scientific notation ("1e-999999999") wherever a quantity is read, from a
// manifest or from a store. apimachinery's resource.Quantity rounds such a
// value with arbitrary precision, minutes of CPU for a dozen bytes; no real
// size or CPU count needs an exponent beyond a few dozen.
const MaxDecimalExponent = 1000

// CheckDecimalExponent reports tok if it is exactly
// [+-]digits[.digits](e|E)[+-]digits, after trimming spaces, with an
// exponent beyond MaxDecimalExponent; anything else (a suffix such as "Ki"
// or "E" for exa, a word, a small exponent) is not its business and passes.
// It allocates nothing unless it reports.
func CheckDecimalExponent(tok []byte) error {
	tok = bytes.TrimSpace(tok)
	k := 0
	if k < len(tok) && (tok[k] == '+' || tok[k] == '-') {
		k++
	}
	start := k
	isDigit := func(c byte) bool { return c >= '0' && c <= '9' }
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
		return fmt.Errorf("number %.64q has a decimal exponent beyond ±%d", string(tok), MaxDecimalExponent)
	}
	return nil
}
