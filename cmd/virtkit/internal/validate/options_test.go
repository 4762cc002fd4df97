package validate

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const vmi = `apiVersion: kubevirt.io/v1
kind: VirtualMachineInstance
metadata: {name: v, namespace: ns}
spec:
  domain:
    devices: {}
    memory: {guest: 64Mi}
`

// Complete joins -f's paths and the arguments; Validate wants input and a
// known format; Run prints a finding per object and returns ErrProblems
// when any is a problem.
func TestOptions(t *testing.T) {
	tests := []struct {
		name, input, output, want, wantErr string
		args                               []string
		problems                           bool
	}{
		{name: "no input", wantErr: "validate: no input; pass -f PATH"},
		{name: "bad output", args: []string{"-"}, output: "xml", wantErr: `validate: --output "xml": must be text or json`},
		{name: "good", args: []string{"-"}, input: vmi, want: "OK VirtualMachineInstance ns/v\n"},
		{name: "unknown field", args: []string{"-"}, input: strings.Replace(vmi, "devices: {}", "devices: {nope: 1}", 1), problems: true,
			want: "VirtualMachineInstance ns/v: spec.domain.devices.nope: UnknownField"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			o := &Options{In: strings.NewReader(tt.input), Out: &out, Output: tt.output, NoCommon: true}
			require.NoError(t, o.Complete(tt.args))
			err := o.Validate()
			if tt.wantErr != "" {
				require.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			err = o.Run(t.Context())
			if tt.problems {
				require.ErrorIs(t, err, ErrProblems)
			} else {
				require.NoError(t, err)
			}
			assert.Contains(t, out.String(), tt.want)
		})
	}
}
