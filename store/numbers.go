package store

import "github.com/virtkit/virtkit"

// MaxDecimalExponent bounds the decimal exponent of a number written in
// scientific notation in a stored value ("1e-999999999"): the bound
// manifests have too ([virtkit.MaxDecimalExponent]).
const MaxDecimalExponent = virtkit.MaxDecimalExponent

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
			if err := virtkit.CheckDecimalExponent(data[i+1 : end]); err != nil {
				return err
			}
			i = end + 1
		case c == '-' || (c >= '0' && c <= '9'):
			j := i
			for j < len(data) && isNumberByte(data[j]) {
				j++
			}
			if err := virtkit.CheckDecimalExponent(data[i:j]); err != nil {
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
