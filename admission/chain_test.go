package admission_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/admission"
)

// step records its runs in a shared log and returns err.
type step struct {
	name string
	ops  []admission.Operation
	err  error
	log  *[]string
}

func (s step) Handles(op admission.Operation) bool {
	for _, o := range s.ops {
		if o == op {
			return true
		}
	}
	return false
}

func (s step) run() error { *s.log = append(*s.log, s.name); return s.err }

type mutator struct{ step }

func (m mutator) Admit(context.Context, admission.Attributes) error { return m.run() }

type validator struct{ step }

func (v validator) Validate(context.Context, admission.Attributes) error { return v.run() }

type needsValid struct{ validator }

func (needsValid) NeedsValid() bool { return true }

func fieldErr(f string) error {
	return admission.Invalid(field.ErrorList{field.Invalid(field.NewPath(f), "x", "bad")})
}

var errStore = errors.New("store down")

func TestChainOrderAndHandles(t *testing.T) {
	c, u := admission.Create, admission.Update
	both := []admission.Operation{c, u}
	tests := []struct {
		name       string
		op         admission.Operation
		build      func(log *[]string) *admission.Chain
		wantRun    []string
		wantFields []string
		wantErr    error
	}{{
		name: "mutating steps first, then validating, each in order",
		op:   c,
		build: func(log *[]string) *admission.Chain {
			return &admission.Chain{
				Mutating:   []admission.MutationInterface{mutator{step{name: "m1", ops: both, log: log}}, mutator{step{name: "m2", ops: both, log: log}}},
				Validating: []admission.ValidationInterface{validator{step{name: "v1", ops: both, log: log}}, validator{step{name: "v2", ops: both, log: log}}},
			}
		},
		wantRun: []string{"m1", "m2", "v1", "v2"},
	}, {
		name: "a step that does not handle the operation is skipped",
		op:   u,
		build: func(log *[]string) *admission.Chain {
			return &admission.Chain{
				Mutating: []admission.MutationInterface{mutator{step{name: "m-create", ops: []admission.Operation{c}, log: log}},
					mutator{step{name: "m-update", ops: []admission.Operation{u}, log: log}}},
				Validating: []admission.ValidationInterface{validator{step{name: "v-delete", ops: []admission.Operation{admission.Delete}, log: log}},
					validator{step{name: "v-both", ops: both, log: log}}},
			}
		},
		wantRun: []string{"m-update", "v-both"},
	}, {
		name: "validating field errors are gathered in order",
		op:   c,
		build: func(log *[]string) *admission.Chain {
			return &admission.Chain{Validating: []admission.ValidationInterface{
				validator{step{name: "v1", ops: both, err: fieldErr("a"), log: log}},
				validator{step{name: "v2", ops: both, log: log}},
				validator{step{name: "v3", ops: both, err: fieldErr("b"), log: log}},
			}}
		},
		wantRun:    []string{"v1", "v2", "v3"},
		wantFields: []string{"a", "b"},
		wantErr:    admission.ErrInvalid,
	}, {
		name: "a step that needs a valid object is skipped after a field error",
		op:   c,
		build: func(log *[]string) *admission.Chain {
			return &admission.Chain{Validating: []admission.ValidationInterface{
				validator{step{name: "v1", ops: both, err: fieldErr("a"), log: log}},
				needsValid{validator{step{name: "refs", ops: both, err: fieldErr("r"), log: log}}},
			}}
		},
		wantRun:    []string{"v1"},
		wantFields: []string{"a"},
		wantErr:    admission.ErrInvalid,
	}, {
		name: "a step that needs a valid object runs when nothing failed",
		op:   c,
		build: func(log *[]string) *admission.Chain {
			return &admission.Chain{Validating: []admission.ValidationInterface{
				validator{step{name: "v1", ops: both, log: log}},
				needsValid{validator{step{name: "refs", ops: both, err: fieldErr("r"), log: log}}},
			}}
		},
		wantRun:    []string{"v1", "refs"},
		wantFields: []string{"r"},
		wantErr:    admission.ErrInvalid,
	}, {
		name: "a mutating field error stops the chain",
		op:   c,
		build: func(log *[]string) *admission.Chain {
			return &admission.Chain{
				Mutating:   []admission.MutationInterface{mutator{step{name: "m1", ops: both, err: fieldErr("m"), log: log}}, mutator{step{name: "m2", ops: both, log: log}}},
				Validating: []admission.ValidationInterface{validator{step{name: "v1", ops: both, log: log}}},
			}
		},
		wantRun:    []string{"m1"},
		wantFields: []string{"m"},
		wantErr:    admission.ErrInvalid,
	}, {
		name: "an error that is not a field error stops the chain as it is",
		op:   c,
		build: func(log *[]string) *admission.Chain {
			return &admission.Chain{Validating: []admission.ValidationInterface{
				validator{step{name: "v1", ops: both, err: fieldErr("a"), log: log}},
				validator{step{name: "v2", ops: both, err: errStore, log: log}},
				validator{step{name: "v3", ops: both, log: log}},
			}}
		},
		wantRun: []string{"v1", "v2"},
		wantErr: errStore,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log []string
			err := tt.build(&log).Admit(context.Background(), admission.Attributes{Operation: tt.op})
			assert.Equal(t, tt.wantRun, log)
			if tt.wantErr == nil {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, tt.wantErr)
			var fields []string
			for _, e := range admission.FieldErrors(err) {
				fields = append(fields, e.Field)
			}
			assert.Equal(t, tt.wantFields, fields)
		})
	}
}

func TestNewOrder(t *testing.T) {
	names := func(c *admission.Chain) (out []string) {
		for _, m := range c.Mutating {
			out = append(out, typeName(m))
		}
		for _, v := range c.Validating {
			out = append(out, typeName(v))
		}
		return out
	}
	assert.Equal(t, []string{"Defaults", "Validate", "Admit", "FeatureGates"}, names(admission.New(admission.Options{})))
	assert.Equal(t, []string{"InferInstancetype", "Defaults", "Validate", "Admit", "CheckInstancetype", "CheckRestore", "FeatureGates"},
		names(admission.New(admission.Options{Lookup: newMemory()})))
}

func TestDefaultsKeepsFirmwareUUIDOnUpdate(t *testing.T) {
	ctx := context.Background()
	chain := admission.New(admission.Options{})
	stored := vmi("a")
	require.NoError(t, chain.Admit(ctx, admission.AttributesFor(admission.Create, stored, nil)))
	uuid := stored.Spec.Domain.Firmware.UUID
	require.NotEmpty(t, uuid)

	next := vmi("a")
	require.NoError(t, chain.Admit(ctx, admission.AttributesFor(admission.Update, next, stored)))
	assert.Equal(t, uuid, next.Spec.Domain.Firmware.UUID)
}

// A VM re-applied without a firmware serial keeps the one it was given
// (before, each update drew a new random serial: the VM's spec changed on
// every apply of the same manifest, and a seeded cluster did not repeat).
func TestDefaultsKeepsVMFirmwareSerialOnUpdate(t *testing.T) {
	ctx := context.Background()
	chain := admission.New(admission.Options{})
	halted := virtkit.RunStrategyHalted
	vm := func() *virtkit.VirtualMachine {
		return &virtkit.VirtualMachine{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default"},
			Spec: virtkit.VirtualMachineSpec{RunStrategy: &halted, Template: &virtkit.VirtualMachineInstanceTemplateSpec{Spec: vmi("a").Spec}}}
	}
	stored := vm()
	require.NoError(t, chain.Admit(ctx, admission.AttributesFor(admission.Create, stored, nil)))
	serial := stored.Spec.Template.Spec.Domain.Firmware.Serial
	require.NotEmpty(t, serial)

	next := vm()
	require.NoError(t, chain.Admit(ctx, admission.AttributesFor(admission.Update, next, stored)))
	assert.Equal(t, serial, next.Spec.Template.Spec.Domain.Firmware.Serial)
}

func TestAdmitCreateAndUpdate(t *testing.T) {
	ctx := context.Background()
	chain := admission.New(admission.Options{})
	stored := vmi("a")
	require.NoError(t, chain.Admit(ctx, admission.AttributesFor(admission.Create, stored, nil)))

	changed := vmi("a")
	changed.Spec.Hostname = "other"
	err := chain.Admit(ctx, admission.AttributesFor(admission.Update, changed, stored))
	require.ErrorIs(t, err, admission.ErrInvalid)
	errs := admission.FieldErrors(err)
	require.NotEmpty(t, errs)
	assert.Equal(t, field.ErrorTypeForbidden, errs[0].Type)
	assert.Equal(t, "spec.hostname", errs[0].Field)

	labelled := vmi("b")
	labelled.Labels = map[string]string{virtkit.NodeNameLabel: "n1"}
	err = chain.Admit(ctx, admission.AttributesFor(admission.Create, labelled, nil))
	require.ErrorIs(t, err, admission.ErrInvalid)
	assert.Equal(t, "metadata.labels[kubevirt.io/nodeName]", admission.FieldErrors(err)[0].Field)
}
