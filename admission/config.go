package admission

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/virtkit/virtkit"
	"github.com/virtkit/virtkit/actions"
	"github.com/virtkit/virtkit/store"
)

// ConfigSource gives the cluster's KubeVirt configuration, read for every
// request so that a change of it applies to the next one.
type ConfigSource interface {
	KubeVirtConfiguration(ctx context.Context) (*virtkit.KubeVirtConfiguration, error)
}

// StoreConfig reads the configuration from the KubeVirt object named
// kubevirt in namespace kubevirt; without one the cluster has KubeVirt's
// default configuration.
type StoreConfig struct {
	// Store holds the KubeVirt object.
	Store interface {
		Get(ctx context.Context, key store.Key, into virtkit.Object) error
	}
}

// KubeVirtConfiguration returns the KubeVirt object's spec.configuration.
func (s StoreConfig) KubeVirtConfiguration(ctx context.Context) (*virtkit.KubeVirtConfiguration, error) {
	kv := &virtkit.KubeVirt{}
	err := s.Store.Get(ctx, store.Key{Namespace: virtkit.DefaultKubeVirtNamespace, Name: virtkit.DefaultKubeVirtName}, kv)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return &virtkit.KubeVirtConfiguration{}, nil
	case err != nil:
		return nil, fmt.Errorf("reading the KubeVirt configuration: %w", err)
	}
	return &kv.Spec.Configuration, nil
}

// DefaultConfig is KubeVirt's default configuration.
type DefaultConfig struct{}

// KubeVirtConfiguration returns an empty configuration: KubeVirt's
// defaults.
func (DefaultConfig) KubeVirtConfiguration(context.Context) (*virtkit.KubeVirtConfiguration, error) {
	return &virtkit.KubeVirtConfiguration{}, nil
}

// FeatureGates refuses the fields whose KubeVirt feature gate the
// cluster's configuration leaves off ([virtkit.AdmitFeatureGates]). A VM's
// template is checked as its instance type and preference expand it, as
// KubeVirt's VM admission checks the expanded template.
type FeatureGates struct {
	Config ConfigSource
	// Lookup resolves a VM's instance type and preference; nil checks the
	// template as written.
	Lookup Lookup
}

// Handles creates and updates.
func (FeatureGates) Handles(op Operation) bool { return createOrUpdate(op) }

// NeedsValid: an invalid object is not expanded and checked again.
func (FeatureGates) NeedsValid() bool { return true }

// Validate returns the gated fields whose gate is off.
func (s FeatureGates) Validate(ctx context.Context, a Attributes) error {
	cfg, err := s.Config.KubeVirtConfiguration(ctx)
	if err != nil {
		return err
	}
	obj := a.Object
	if vm, ok := obj.(*virtkit.VirtualMachine); ok && s.Lookup != nil && vm.Spec.Template != nil &&
		(vm.Spec.Instancetype != nil || vm.Spec.Preference != nil) {
		it, pref, err := actions.InstancetypeSpecs(ctx, s.Lookup, vm)
		if errors.Is(err, store.ErrNotFound) {
			return nil // CheckInstancetype reports it
		}
		if err != nil {
			return err
		}
		expanded := vm.DeepCopy()
		if errs := virtkit.ApplyInstancetype(expanded.Spec.Template, it, pref, field.NewPath("spec", "template", "spec")); len(errs) > 0 {
			return nil // CheckInstancetype reports them
		}
		obj = expanded
	}
	return Invalid(virtkit.AdmitFeatureGates(obj, cfg.FeatureGates()))
}

// configDefaults overlays what the cluster's configuration says about
// object defaults: the eviction strategy of VMIs that set none, the
// memory overcommit (the memory request of VMIs that set none), and the
// VM rollout strategy (Stage sets no hot-plug maxima).
func configDefaults(o virtkit.DefaultOptions, cfg *virtkit.KubeVirtConfiguration) virtkit.DefaultOptions {
	if cfg == nil {
		return o
	}
	if es := cfg.EvictionStrategy; es != nil {
		o.EvictionStrategy = *es
	}
	if d := cfg.DeveloperConfiguration; d != nil {
		o.MemoryOvercommit = d.MemoryOvercommit
	}
	if rs := cfg.VMRolloutStrategy; rs != nil {
		o.NoHotplug = *rs == virtkit.VMRolloutStrategyStage
	}
	return o
}
