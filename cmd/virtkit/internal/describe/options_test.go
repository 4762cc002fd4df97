package describe

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOptionsCompleteValidate(t *testing.T) {
	tests := []struct {
		name                  string
		args                  []string
		selector              string
		completeErr, validErr string
		wantKind              string
		wantNames             []string
	}{
		{name: "kind only", args: []string{"vms"}, wantKind: "vms", wantNames: []string{}},
		{name: "names", args: []string{"vm", "a", "b"}, wantKind: "vm", wantNames: []string{"a", "b"}},
		{name: "selector", args: []string{"vms"}, selector: "app=web", wantKind: "vms", wantNames: []string{}},
		{name: "no kind", args: nil, completeErr: "requires at least 1 arg(s), only received 0"},
		{name: "selector and names", args: []string{"vm", "a"}, selector: "app=web",
			validErr: "name cannot be provided when a selector is specified"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := &Options{Selector: tt.selector}
			err := o.Complete(tt.args)
			if tt.completeErr != "" {
				require.EqualError(t, err, tt.completeErr)
				return
			}
			require.NoError(t, err)
			err = o.Validate()
			if tt.validErr != "" {
				require.EqualError(t, err, tt.validErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantKind, o.Kind)
			assert.Equal(t, tt.wantNames, o.Names)
			assert.NotNil(t, o.Now)
		})
	}
}

func TestRunNeedsAPI(t *testing.T) {
	o := &Options{}
	require.NoError(t, o.Complete([]string{"vms"}))
	assert.ErrorIs(t, o.Run(t.Context()), ErrNoTransport)
}
