package node

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/virtkit/virtkit"
)

// The grace period is spec.terminationGracePeriodSeconds (30 s when
// unset), shortened by a delete that asked for less; the zero
// deletionGracePeriodSeconds every delete of an object with finalizers
// carries asks for nothing.
func TestGracePeriod(t *testing.T) {
	i := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name     string
		spec     *int64
		deletion *int64
		want     time.Duration
	}{
		{name: "default", want: 30 * time.Second},
		{name: "spec", spec: i(180), want: 180 * time.Second},
		{name: "spec zero: forced", spec: i(0), want: 0},
		{name: "delete marks with zero", spec: i(180), deletion: i(0), want: 180 * time.Second},
		{name: "delete asks for less", spec: i(180), deletion: i(10), want: 10 * time.Second},
		{name: "delete asks for more", spec: i(5), deletion: i(10), want: 5 * time.Second},
		{name: "delete shortens the default", deletion: i(10), want: 10 * time.Second},
		{name: "negative spec", spec: i(-1), want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vmi := &virtkit.VirtualMachineInstance{}
			vmi.Spec.TerminationGracePeriodSeconds = tc.spec
			vmi.DeletionGracePeriodSeconds = tc.deletion
			assert.Equal(t, tc.want, gracePeriod(vmi))
		})
	}
}
