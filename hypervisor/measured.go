package hypervisor

import (
	"encoding/json"
	"time"
)

// Number is what a [Measured] value can hold.
type Number interface {
	~int | ~int64 | ~uint64 | ~float64 | ~uint32 | ~int32
}

// Measured is a value that a backend may or may not have measured. The zero
// value is "not measured", which is different from a measured zero: a dirty
// rate of 0 B/s means an idle guest, an unmeasured one means nothing yet.
type Measured[T Number | time.Duration] struct {
	Value T
	Valid bool
}

// Some returns a measured value.
func Some[T Number | time.Duration](v T) Measured[T] { return Measured[T]{Value: v, Valid: true} }

// Get returns the value and whether it was measured.
func (m Measured[T]) Get() (T, bool) { return m.Value, m.Valid }

// Or returns the value, or def when it was not measured.
func (m Measured[T]) Or(def T) T {
	if !m.Valid {
		return def
	}
	return m.Value
}

// MarshalJSON writes null for a value that was not measured.
func (m Measured[T]) MarshalJSON() ([]byte, error) {
	if !m.Valid {
		return []byte("null"), nil
	}
	return json.Marshal(m.Value)
}

// UnmarshalJSON reads null as "not measured".
func (m *Measured[T]) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*m = Measured[T]{}
		return nil
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*m = Some(v)
	return nil
}
