package virtkit

import "errors"

// ErrInvalidOptions is wrapped by every error a virtkit constructor returns
// about the options it was given (a cluster, a node agent, a controller, a
// collector, an event recorder...), so one errors.Is test covers them all.
// The error's text names the component and the field:
// "invalid node agent options: NodeName: required".
var ErrInvalidOptions = errors.New("invalid options")

// InvalidOptions returns the error a component wraps for options it cannot
// use: its text is "invalid <component> options" and it matches
// [ErrInvalidOptions].
func InvalidOptions(component string) error { return optionsError(component) }

type optionsError string

func (e optionsError) Error() string { return "invalid " + string(e) + " options" }

func (e optionsError) Is(target error) bool { return target == ErrInvalidOptions }
