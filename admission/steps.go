package admission

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/types"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/store"
)

// Lookup is where the steps read the objects a VM refers to (instance
// types, preferences, DataVolumes); only Get is used.
type Lookup = store.Store

// Options configure [New].
type Options struct {
	// Defaults are the object defaults (a cluster's configuration).
	Defaults virtkit.DefaultOptions
	// Lookup backs the instance type steps; nil leaves them out.
	Lookup Lookup
	// Config is the cluster's KubeVirt configuration: its feature gates
	// decide which gated fields are admitted, its eviction and rollout
	// strategies are object defaults. nil reads the KubeVirt object
	// kubevirt/kubevirt from Lookup ([StoreConfig]), or without a Lookup
	// takes KubeVirt's defaults ([DefaultConfig]).
	Config ConfigSource
}

// New returns the chain every writer uses; see the package documentation
// for its steps and their order.
func New(o Options) *Chain {
	c := &Chain{}
	if o.Lookup != nil {
		c.Mutating = append(c.Mutating, InferInstancetype{Lookup: o.Lookup})
	}
	cfg := o.Config
	switch {
	case cfg != nil:
	case o.Lookup != nil:
		cfg = StoreConfig{Store: o.Lookup}
	default:
		cfg = DefaultConfig{}
	}
	c.Mutating = append(c.Mutating, Defaults{Options: o.Defaults, Config: cfg})
	c.Validating = append(c.Validating, Validate{}, Admit{})
	if o.Lookup != nil {
		c.Validating = append(c.Validating, CheckInstancetype{Lookup: o.Lookup}, CheckRestore{Lookup: o.Lookup})
	}
	c.Validating = append(c.Validating, FeatureGates{Config: cfg, Lookup: o.Lookup})
	return c
}

func createOrUpdate(op Operation) bool { return op == Create || op == Update }

// InferInstancetype resolves a VM's inferFromVolume matchers.
type InferInstancetype struct{ Lookup Lookup }

// Handles creates and updates.
func (InferInstancetype) Handles(op Operation) bool { return createOrUpdate(op) }

// Admit replaces an inferFromVolume matcher with the instance type or
// preference the volume's labels name.
func (s InferInstancetype) Admit(ctx context.Context, a Attributes) error {
	errs, err := InferFromVolume(ctx, s.Lookup, a.Object)
	if err != nil {
		return err
	}
	return Invalid(errs)
}

// Defaults applies object defaults, with the eviction and rollout
// strategies of the cluster's configuration when Config is set.
type Defaults struct {
	Options virtkit.DefaultOptions
	Config  ConfigSource
}

// Handles creates and updates.
func (Defaults) Handles(op Operation) bool { return createOrUpdate(op) }

// Admit defaults a.Object. An update draws no new firmware UUID: a VMI
// keeps the one stored.
func (s Defaults) Admit(ctx context.Context, a Attributes) error {
	opts := s.Options
	if s.Config != nil {
		cfg, err := s.Config.KubeVirtConfiguration(ctx)
		if err != nil {
			return err
		}
		opts = configDefaults(opts, cfg)
	}
	if a.Operation == Update {
		opts.NewUUID = nil
		if vmi, ok := a.OldObject.(*virtkit.VirtualMachineInstance); ok {
			if fw := vmi.Spec.Domain.Firmware; fw != nil && fw.UUID != "" {
				uuid := fw.UUID
				opts.NewUUID = func() types.UID { return uuid }
			}
		}
		// A VM updated without a firmware serial in its template keeps
		// the one it was given: a re-applied manifest neither changes the
		// VM's spec nor draws a serial the seed did not choose.
		if vm, ok := a.OldObject.(*virtkit.VirtualMachine); ok && vm.Spec.Template != nil {
			if fw := vm.Spec.Template.Spec.Domain.Firmware; fw != nil && fw.Serial != "" {
				serial := types.UID(fw.Serial)
				opts.NewUUID = func() types.UID { return serial }
			}
		}
	}
	opts.SetDefaults(a.Object)
	return nil
}

// Validate runs the object's own rules ([virtkit.Validate]).
type Validate struct{}

// Handles creates and updates.
func (Validate) Handles(op Operation) bool { return createOrUpdate(op) }

// Validate returns the object's field errors.
func (Validate) Validate(_ context.Context, a Attributes) error {
	return Invalid(virtkit.Validate(a.Object))
}

// Admit runs [virtkit.AdmitCreate] or [virtkit.AdmitUpdate].
type Admit struct{}

// Handles creates and updates.
func (Admit) Handles(op Operation) bool { return createOrUpdate(op) }

// Validate refuses what a user may not write.
func (Admit) Validate(_ context.Context, a Attributes) error {
	if a.Operation == Update && a.OldObject != nil {
		return Invalid(virtkit.AdmitUpdate(a.Object, a.OldObject))
	}
	return Invalid(virtkit.AdmitCreate(a.Object))
}

// CheckInstancetype checks a VM against the instance type and preference
// it names ([AdmitInstancetype]).
type CheckInstancetype struct{ Lookup Lookup }

// Handles creates and updates.
func (CheckInstancetype) Handles(op Operation) bool { return createOrUpdate(op) }

// NeedsValid: an invalid template is not expanded.
func (CheckInstancetype) NeedsValid() bool { return true }

// Validate returns the conflicts between the VM and what it names.
func (s CheckInstancetype) Validate(ctx context.Context, a Attributes) error {
	errs, err := AdmitInstancetype(ctx, s.Lookup, a.Object)
	if err != nil {
		return err
	}
	return Invalid(errs)
}

// CheckRestore checks a new VirtualMachineRestore against the snapshot and
// the target VM it names ([virtkit.AdmitRestore]): the snapshot must exist
// and not have failed, an existing target must be stopped.
type CheckRestore struct{ Lookup Lookup }

// Handles creates (a restore's spec is immutable).
func (CheckRestore) Handles(op Operation) bool { return op == Create }

// NeedsValid: an invalid restore names nothing worth looking up.
func (CheckRestore) NeedsValid() bool { return true }

// Validate returns what the snapshot and target VM object to.
func (s CheckRestore) Validate(ctx context.Context, a Attributes) error {
	r, ok := a.Object.(*virtkit.VirtualMachineRestore)
	if !ok {
		return nil
	}
	snap := &virtkit.VirtualMachineSnapshot{}
	if found, err := lookup(ctx, s.Lookup, store.Key{Namespace: r.Namespace, Name: r.Spec.VirtualMachineSnapshotName}, snap); err != nil {
		return err
	} else if !found {
		snap = nil
	}
	vm := &virtkit.VirtualMachine{}
	if found, err := lookup(ctx, s.Lookup, store.Key{Namespace: r.Namespace, Name: r.Spec.Target.Name}, vm); err != nil {
		return err
	} else if !found {
		vm = nil
	}
	return Invalid(virtkit.AdmitRestore(r, snap, vm))
}

func lookup(ctx context.Context, l Lookup, key store.Key, obj virtkit.Object) (bool, error) {
	err := l.Get(ctx, key, obj)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return err == nil, err
}
