package virtkit_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/virtkit/virtkit"
)

func TestInvalidOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		text string
		is   bool
	}{
		{"component", virtkit.InvalidOptions("node agent"), "invalid node agent options", true},
		{"wrapped with a field", fmt.Errorf("%w: NodeName: required", virtkit.InvalidOptions("node agent")),
			"invalid node agent options: NodeName: required", true},
		{"another error", errors.New("invalid node agent options"), "invalid node agent options", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.EqualError(t, tc.err, tc.text)
			assert.Equal(t, tc.is, errors.Is(tc.err, virtkit.ErrInvalidOptions))
		})
	}
}

func ExampleInvalidOptions() {
	errOptions := virtkit.InvalidOptions("scrubber")
	err := fmt.Errorf("%w: Interval: must be positive", errOptions)
	fmt.Println(err)
	fmt.Println(errors.Is(err, virtkit.ErrInvalidOptions))
	// Output:
	// invalid scrubber options: Interval: must be positive
	// true
}
