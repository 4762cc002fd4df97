package virtctl

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Complete reads pause's and unpause's vm|vmi, Validate the pairing of
// --force and --grace-period; Run without a connection says so.
func TestOptionsCompleteValidate(t *testing.T) {
	pause := Verbs()[2]
	require.Equal(t, "pause", pause.Sub)
	tests := []struct {
		name             string
		o                Options
		args             []string
		wantErr, wantRes string
		wantBody         map[string]any
	}{
		{name: "pause vm", o: Options{Verb: pause}, args: []string{"VM", "a"}, wantRes: VirtualMachineInstances, wantBody: map[string]any{}},
		{name: "pause bad kind", o: Options{Verb: pause}, args: []string{"pod", "a"}, wantErr: `pause: want vm or vmi, got "pod"`},
		{name: "wrong count", o: Options{Verb: Stop()}, args: []string{"a", "b"}, wantErr: "accepts 1 arg(s), received 2"},
		{name: "grace without force", o: Options{Verb: Stop(), GracePeriodSet: true}, args: []string{"a"}, wantErr: "--grace-period: needs --force"},
		{name: "force without grace", o: Options{Verb: Restart(), Force: true}, args: []string{"a"}, wantErr: "--force: needs --grace-period"},
		{name: "negative grace", o: Options{Verb: Stop(), Force: true, GracePeriodSet: true, GracePeriod: -1}, args: []string{"a"},
			wantErr: "must not be negative"},
		{name: "restart grace", o: Options{Verb: Restart(), Force: true, GracePeriodSet: true}, args: []string{"a"}, wantRes: VirtualMachines,
			wantBody: map[string]any{"gracePeriodSeconds": int64(0)}},
		{name: "start paused", o: Options{Verb: Verbs()[0], Paused: true}, args: []string{"a"}, wantRes: VirtualMachines,
			wantBody: map[string]any{"paused": true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := tt.o
			o.Out = &bytes.Buffer{}
			err := o.Complete(tt.args)
			if err == nil {
				err = o.Validate()
			}
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantRes, o.Resource)
			assert.Equal(t, tt.args[len(tt.args)-1], o.Name)
			assert.Equal(t, tt.wantBody, o.body())
			assert.ErrorIs(t, o.Run(t.Context()), ErrNoAPI)
		})
	}
}
