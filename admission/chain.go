package admission

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Interface is what every step declares: the operations it takes part in.
type Interface interface {
	Handles(op Operation) bool
}

// MutationInterface is a step that may change a.Object.
type MutationInterface interface {
	Interface
	Admit(ctx context.Context, a Attributes) error
}

// ValidationInterface is a step that judges a.Object without changing it.
type ValidationInterface interface {
	Interface
	Validate(ctx context.Context, a Attributes) error
}

// NeedsValid is implemented by a validating step that only runs when the
// steps before it found nothing wrong.
type NeedsValid interface {
	NeedsValid() bool
}

// Chain is an ordered list of mutating steps and of validating steps.
type Chain struct {
	Mutating   []MutationInterface
	Validating []ValidationInterface
}

// Admit runs every mutating step that handles a.Operation, in order, then
// every such validating step, in order. Field errors (steps return them
// with [Invalid]) are gathered into one error wrapping [ErrInvalid]; a
// mutating step's field errors and any other error end the chain at once.
func (c *Chain) Admit(ctx context.Context, a Attributes) error {
	for _, m := range c.Mutating {
		if !m.Handles(a.Operation) {
			continue
		}
		if err := m.Admit(ctx, a); err != nil {
			return err
		}
	}
	var errs field.ErrorList
	for _, v := range c.Validating {
		if !v.Handles(a.Operation) {
			continue
		}
		if n, ok := v.(NeedsValid); ok && n.NeedsValid() && len(errs) > 0 {
			continue
		}
		err := v.Validate(ctx, a)
		var ie *InvalidError
		switch {
		case err == nil:
		case errors.As(err, &ie):
			errs = append(errs, ie.Errs...)
		default:
			return err
		}
	}
	return Invalid(errs)
}
