package virtkit

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunStrategy(t *testing.T) {
	tests := []struct {
		name    string
		running *bool
		rs      *VirtualMachineRunStrategy
		want    VirtualMachineRunStrategy
		wantErr bool
	}{
		{name: "neither set is Halted", want: RunStrategyHalted},
		{name: "running true is Always", running: ptrTo(true), want: RunStrategyAlways},
		{name: "running false is Halted", running: ptrTo(false), want: RunStrategyHalted},
		{name: "runStrategy wins", rs: ptrTo(RunStrategyManual), want: RunStrategyManual},
		{name: "both set is an error", running: ptrTo(false), rs: ptrTo(RunStrategyOnce), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vm := &VirtualMachine{Spec: VirtualMachineSpec{Running: tt.running, RunStrategy: tt.rs}}
			got, err := vm.RunStrategy()
			if tt.wantErr {
				require.ErrorIs(t, err, ErrRunStrategy)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
